// ROUTER: from the router logits src0 f32 [n_expert, n_tok], each token's k experts into dst i32 [k, n_tok] and
// their weights into src2 f32 [k, n_tok] (an output). i[0] k (1..n_expert); i[1] gating: 0 softmax over all
// n_expert logits, 1 sigmoid of each logit, 2 (gpt-oss) the logits themselves choose and the weights are the softmax
// over the k chosen logits alone; i[2] nonzero: divide the k weights by their sum; f[0] a factor every
// weight is multiplied by last; src1 f32 [n_expert] a selection bias (absent when src1.data is NULL).
// Per token, in double:
//   p_e = softmax(l)_e or 1 / (1 + exp(-l_e))
//   the chosen experts are the k largest p_e + bias_e, largest first, ties to the lower expert id
//   weight = p_e (the bias only selects), then / sum of the k weights (when normalising), then * f[0]
// Groups (i[3] = n_group > 1, i[4] = topk_group): the experts are n_group groups of consecutive ids; a group's score
// is the sum of its two largest p_e + bias_e (its one when a group has one expert), the topk_group best groups are
// kept (ties to the lower group), and only their experts can be chosen.
// Gating 2: p_e = l_e for the choice; the chosen logits c_0, c_1, ... in the order chosen (c_0 the largest when
// there is no selection bias) weigh exp(c_j - c_0) / (sum over j of exp(c_j - c_0), ascending j), then the
// normalising and f[0] as above.
// and the weights are rounded to float.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"

namespace strata::reference {

void router(const strata_op& op) {
  const char* name = "ROUTER";
  const strata_tensor& logits = op.src[0];
  const strata_tensor& bias = op.src[1];
  const strata_tensor& ids = op.dst;
  const strata_tensor& weights = op.src[2];
  const int64_t k = op.i[0];
  const int gating = op.i[1];
  const bool normalize = op.i[2] != 0;
  require_type(name, "src0 (logits)", logits, GgmlType::F32);
  require_contiguous_rows(name, "src0 (logits)", logits);
  const int64_t n_expert = logits.ne[0];
  const int64_t n_tok = logits.ne[1];
  require(k >= 1 && k <= n_expert, name, "src0 (logits)", logits,
          "at least i[0] = k experts (k = " + std::to_string(k) + ")");
  require(gating >= 0 && gating <= 2, name, "src0 (logits)", logits,
          "i[1] (gating) 0, 1 or 2, not " + std::to_string(gating));
  const int64_t n_group = op.i[3] > 1 ? op.i[3] : 1;
  const int64_t topk_group = op.i[4];
  require(n_group == 1 || (n_expert % n_group == 0 && topk_group >= 1 && topk_group <= n_group &&
                           k <= topk_group * (n_expert / n_group)),
          name, "src0 (logits)", logits,
          "i[3] (groups) dividing the experts, with i[4] (groups kept) in 1..groups holding at least k experts");
  require_type(name, "dst (ids)", ids, GgmlType::I32);
  require(ids.ne[0] == k && ids.ne[1] == n_tok, name, "dst (ids)", ids,
          "[" + std::to_string(k) + ", " + std::to_string(n_tok) + "]");
  require_type(name, "src2 (weights)", weights, GgmlType::F32);
  require_data(name, "src2 (weights)", weights);
  require(weights.ne[0] == k && weights.ne[1] == n_tok, name, "src2 (weights)", weights,
          "[" + std::to_string(k) + ", " + std::to_string(n_tok) + "]");
  std::vector<float> b;
  if (bias.data != nullptr) {
    require_type(name, "src1 (bias)", bias, GgmlType::F32);
    require(bias.ne[0] == n_expert, name, "src1 (bias)", bias, "one value per expert");
    b = read_row(bias, 0);
  }
  const double factor = static_cast<double>(op.f[0]);
  for (int64_t t = 0; t < n_tok; ++t) {
    const std::vector<float> l = read_row(logits, t);
    std::vector<double> p(l.size());
    if (gating == 0) {
      const double m = static_cast<double>(*std::max_element(l.begin(), l.end()));
      double total = 0.0;
      for (size_t e = 0; e < l.size(); ++e) total += p[e] = std::exp(static_cast<double>(l[e]) - m);
      for (double& v : p) v /= total;
    } else if (gating == 1) {
      for (size_t e = 0; e < l.size(); ++e) p[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(l[e])));
    } else {
      for (size_t e = 0; e < l.size(); ++e) p[e] = static_cast<double>(l[e]);
    }
    std::vector<int32_t> order(l.size());
    std::iota(order.begin(), order.end(), 0);
    const auto score = [&](int32_t e) {
      return p[static_cast<size_t>(e)] + (b.empty() ? 0.0 : static_cast<double>(b[static_cast<size_t>(e)]));
    };
    if (n_group > 1) {
      // Each group's score, then every expert of a group outside the best topk_group is ranked last.
      const int64_t per = n_expert / n_group;
      std::vector<double> group_score(static_cast<size_t>(n_group));
      for (int64_t gi = 0; gi < n_group; ++gi) {
        std::vector<double> sc;
        for (int64_t e = gi * per; e < (gi + 1) * per; ++e) sc.push_back(score(static_cast<int32_t>(e)));
        std::sort(sc.begin(), sc.end(), std::greater<>());
        group_score[static_cast<size_t>(gi)] = sc.size() >= 2 ? sc[0] + sc[1] : sc[0];
      }
      std::vector<int64_t> groups(static_cast<size_t>(n_group));
      std::iota(groups.begin(), groups.end(), int64_t{0});
      std::stable_sort(groups.begin(), groups.end(), [&](int64_t x, int64_t y) {
        return group_score[static_cast<size_t>(x)] > group_score[static_cast<size_t>(y)];
      });
      std::vector<bool> kept(static_cast<size_t>(n_group), false);
      for (int64_t r = 0; r < topk_group; ++r) kept[static_cast<size_t>(groups[static_cast<size_t>(r)])] = true;
      std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
        const bool kx = kept[static_cast<size_t>(x / per)], ky = kept[static_cast<size_t>(y / per)];
        if (kx != ky) return kx;
        return score(x) > score(y);
      });
    } else {
      std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return score(x) > score(y); });
    }
    if (gating == 2) {
      // Softmax over the chosen, shifted by the first chosen logit (the largest without a selection bias).
      const double top = p[static_cast<size_t>(order[0])];
      std::vector<double> chosen(static_cast<size_t>(k));
      double total = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        chosen[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(order[static_cast<size_t>(j)])] - top);
        total += chosen[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < k; ++j) p[static_cast<size_t>(order[static_cast<size_t>(j)])] = chosen[static_cast<size_t>(j)] / total;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += p[static_cast<size_t>(order[static_cast<size_t>(j)])];
    std::vector<float> w(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = order[static_cast<size_t>(j)];
      double v = p[static_cast<size_t>(e)];
      if (normalize) v /= sum;
      w[static_cast<size_t>(j)] = static_cast<float>(v * factor);
      write_i32(ids, e, j, t);
    }
    write_row(weights, w.data(), t);
  }
}

}  // namespace strata::reference
