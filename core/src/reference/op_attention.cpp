// ATTENTION: dst f32 [head_dim * n_head, n_tok] = causal attention of the queries src0 f32 [head_dim, n_head,
// n_tok] over the caches src1 (keys) and src2 (values), each [head_dim * n_kv_head, n_ctx] of F16, Q8_0 or F32,
// at the positions src3 i32 [n_tok]. i[0] n_head, i[1] n_kv_head (dividing n_head); f[0] the score scale.
// Query head h reads kv head h / (n_head / n_kv_head) (grouped-query attention). For token t at position P,
// over cache columns j = 0..P (decoded by dequantize_row), in double (docs/CANONICAL_ARITHMETIC.md section 6):
//   s_j = scale * (sum_d q[d] k_j[d], the 32-lane order); M = max_j s_j; e_j = exp(s_j - M);
//   out[d] = (float)((sum_j e_j v_j[d]) / (sum_j e_j)), both sums over ascending j (here; other devices may
//   group the positions differently). Head h fills dst[h * head_dim, (h + 1) * head_dim) of column t.
// Backend 1.6: i[2] = W > 0, a sliding window: only columns P - W < j <= P; src4 (when struct_size covers it and
// its data is set) f32 [n_head] sinks: M = max(max_j s_j, sink_h) and the denominator gains exp(sink_h - M), added
// after the columns' terms; the sink has no value row. Value heads have dv = src2.ne[0] / n_kv_head values (dk = q's
// head size otherwise), and src2 may be a view of src1's first columns (deepseek2: the latent is key and value);
// head h then fills dst[h * dv, (h + 1) * dv).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical_double.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {

void attention(const strata_op& op) {
  const char* name = "ATTENTION";
  const strata_tensor& q = op.src[0];
  const strata_tensor& kc = op.src[1];
  const strata_tensor& vc = op.src[2];
  const strata_tensor& pos = op.src[3];
  const strata_tensor& dst = op.dst;
  const int64_t n_head = op.i[0];
  const int64_t n_kv_head = op.i[1];
  require_type(name, "src0 (q)", q, GgmlType::F32);
  require_contiguous_rows(name, "src0 (q)", q);
  const int64_t head_dim = q.ne[0];
  require(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0 && q.ne[1] == n_head, name, "src0 (q)", q,
          "[head_dim, i[0] = n_head, n_tok] with i[1] = n_kv_head dividing n_head");
  for (const strata_tensor* c : {&kc, &vc}) {
    const GgmlType ct = tensor_type(*c);
    require(ct == GgmlType::F16 || ct == GgmlType::Q8_0 || ct == GgmlType::F32, name, "a cache", *c,
            "f16, q8_0 or f32");
    require_contiguous_rows(name, "a cache", *c);
  }
  require(kc.ne[0] == head_dim * n_kv_head, name, "src1 (k cache)", kc,
          "[" + std::to_string(head_dim * n_kv_head) + ", n_ctx]");
  require(vc.ne[0] > 0 && vc.ne[0] % n_kv_head == 0, name, "src2 (v cache)", vc, "[dv * n_kv_head, n_ctx]");
  const int64_t value_dim = vc.ne[0] / n_kv_head;
  require(kc.ne[1] == vc.ne[1], name, "src2 (v cache)", vc, "as many columns as the k cache");
  require_type(name, "src3 (positions)", pos, GgmlType::I32);
  require(pos.ne[0] == q.ne[2], name, "src3 (positions)", pos, "one position per token");
  require_type(name, "dst", dst, GgmlType::F32);
  require(dst.ne[0] == value_dim * n_head && dst.ne[1] == q.ne[2], name, "dst", dst,
          "[" + std::to_string(value_dim * n_head) + ", " + std::to_string(q.ne[2]) + "]");
  const int64_t window = op.i[2];
  require(window >= 0, name, "src0 (q)", q, "i[2] (sliding window) 0 or positive, not " + std::to_string(window));
  std::vector<float> sinks;
  if (op.struct_size >= offsetof(strata_op, src4) + sizeof(strata_tensor) && op.src4.data != nullptr) {
    require_type(name, "src4 (sinks)", op.src4, GgmlType::F32);
    require(op.src4.ne[0] == n_head, name, "src4 (sinks)", op.src4, "one sink per query head");
    sinks = read_row(op.src4, 0);
  }
  const double scale = static_cast<double>(op.f[0]);
  const int64_t group = n_head / n_kv_head;
  std::vector<float> out(static_cast<size_t>(value_dim * n_head));
  for (int64_t t = 0; t < q.ne[2]; ++t) {
    const int32_t p = read_i32(pos, t);
    if (p < 0 || p >= kc.ne[1]) {
      throw Error("ATTENTION: position " + std::to_string(p) + " is outside the cache's " +
                  std::to_string(kc.ne[1]) + " columns");
    }
    // Decode the cache columns this token sees once for all heads.
    const int64_t first = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
    std::vector<std::vector<float>> keys, values;
    for (int64_t j = first; j <= p; ++j) {
      keys.push_back(read_row(kc, j));
      values.push_back(read_row(vc, j));
    }
    for (int64_t h = 0; h < n_head; ++h) {
      const std::vector<float> qh = read_row(q, h, t);
      const size_t off = static_cast<size_t>((h / group) * head_dim);
      const size_t voff = static_cast<size_t>((h / group) * value_dim);
      std::vector<double> s(keys.size());
      for (size_t j = 0; j < s.size(); ++j) s[j] = scale * format::dot32_d(qh.data(), keys[j].data() + off, head_dim);
      const double sink = sinks.empty() ? 0.0 : static_cast<double>(sinks[static_cast<size_t>(h)]);
      double max_s = *std::max_element(s.begin(), s.end());
      if (!sinks.empty()) max_s = std::max(max_s, sink);
      double total = 0.0;
      for (double& v : s) {
        v = std::exp(v - max_s);
        total = total + v;
      }
      if (!sinks.empty()) total = total + std::exp(sink - max_s);
      for (size_t d = 0; d < static_cast<size_t>(value_dim); ++d) {
        double acc = 0.0;
        for (size_t j = 0; j < s.size(); ++j) acc = acc + s[j] * static_cast<double>(values[j][voff + d]);
        out[static_cast<size_t>(h * value_dim) + d] = static_cast<float>(acc / total);
      }
    }
    write_row(dst, out.data(), t);
  }
}

}  // namespace strata::reference
