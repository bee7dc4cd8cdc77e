#include "strata/suggest.hpp"

#include <algorithm>

namespace strata {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: a transposition counts as one edit, the commonest typo in flags.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = 0;
  for (const std::string& c : candidates) {
    size_t dist = edit_distance(word, c);
    if (!word.empty() && c.size() > word.size() && c.compare(0, word.size(), word) == 0) dist = std::min<size_t>(dist, 1);
    if (!best || dist < best_d) {
      best = c;
      best_d = dist;
    }
  }
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  if (best && best_d <= limit && best_d > 0) return best;
  return std::nullopt;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto n = nearest(word, candidates);
  return n ? " (did you mean '" + *n + "'?)" : std::string();
}

}  // namespace strata
