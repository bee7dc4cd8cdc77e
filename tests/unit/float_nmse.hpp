// The NMSE comparison of float outputs (NaN and Inf must sit at the same places), shared by the op-parity harness
// and the GPU tests of fused ops: "" when the NMSE is at most max_nmse, else what differs, named `name`.
#pragma once

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace strata::test {

inline std::string nmse_mismatch(const std::string& name, const std::vector<unsigned char>& want,
                                 const std::vector<unsigned char>& got, double max_nmse) {
  std::ostringstream msg;
  if (want.size() != got.size()) return name + ": sizes differ";
  const size_t n = want.size() / 4;
  std::vector<float> w(n), g(n);
  std::memcpy(w.data(), want.data(), 4 * n);
  std::memcpy(g.data(), got.data(), 4 * n);
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const bool wn = std::isnan(w[i]), gn = std::isnan(g[i]);
    const bool wi = std::isinf(w[i]), gi = std::isinf(g[i]);
    if (wn != gn || wi != gi || (wi && w[i] != g[i])) {
      msg << name << ": NaN/Inf parity differs at " << i << " (want " << w[i] << ", got " << g[i] << ")";
      return msg.str();
    }
    if (wn || wi) continue;
    const double d = static_cast<double>(w[i]) - static_cast<double>(g[i]);
    err += d * d;
    norm += static_cast<double>(w[i]) * static_cast<double>(w[i]);
  }
  const double nmse = norm > 0.0 ? err / norm : err;
  if (nmse <= max_nmse) return "";
  msg << name << ": NMSE " << nmse << " > " << max_nmse;
  return msg.str();
}

// The same over float vectors.
inline std::string nmse_mismatch(const std::string& name, const std::vector<float>& want, const std::vector<float>& got,
                                 double max_nmse) {
  const auto bytes = [](const std::vector<float>& v) {
    std::vector<unsigned char> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  return nmse_mismatch(name, bytes(want), bytes(got), max_nmse);
}

}  // namespace strata::test
