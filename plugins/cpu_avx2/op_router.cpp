// ROUTER (expert selection per token) and SOFTMAX. Softmax: max, exp_c(x - max), the 8-lane sum, one division
// per value. ROUTER: probabilities by softmax or sigmoid (1 / (1 + exp_c(-x))), selection by probability plus
// the optional bias, top k by descending score (ties: the lower id first), weights = the selected experts'
// probabilities, optionally divided by their sum, times f[0].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "ops.hpp"
#include "row_math.hpp"
#include "tensor_view.hpp"
#include "vec_math.hpp"

namespace strata::cpu {
namespace {

STRATA_AVX2 void divide_by(float* x, float s, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), sv));
  for (; i < n; ++i) x[i] = x[i] / s;
}

STRATA_AVX2 void sigmoid_row(const float* x, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const int len = n - i < 8 ? static_cast<int>(n - i) : 8;
    alignas(32) float buf[8] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(len) * sizeof(float));
    const __m256 e = exp_c8(_mm256_xor_ps(_mm256_load_ps(buf), _mm256_set1_ps(-0.0f)));
    _mm256_store_ps(buf, _mm256_div_ps(one, _mm256_add_ps(one, e)));
    std::memcpy(out + i, buf, static_cast<size_t>(len) * sizeof(float));
  }
}

// Selection order key: NaN scores sort last (as -inf), so the order stays a strict weak ordering.
float rank_key(float s) { return std::isnan(s) ? -INFINITY : s; }

// out = softmax(x * s) over n values (out may be x).
void softmax_row(const float* x, float s, float* out, int64_t n) {
  scale(x, s, out, n);
  const float mx = max_row(out, n);
  const float sum = exp_shifted_sum(out, mx, out, n);
  divide_by(out, sum, n);
}

}  // namespace

Check check_softmax(const strata_op& op) {
  if (auto e = check_rows(op.src[0], "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(op.dst, "dst", format::GgmlType::F32)) return e;
  if (op.dst.ne[0] != op.src[0].ne[0] || row_count(op.dst) != row_count(op.src[0])) {
    return std::string("dst shape differs from src0");
  }
  return std::nullopt;
}

void run_softmax(Context& ctx, const strata_op& op) {
  const int64_t n = op.src[0].ne[0];
  for_items(ctx, row_count(op.src[0]), n * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) softmax_row(row_ptr<const float>(op.src[0], r), op.f[0], row_ptr<float>(op.dst, r), n);
  });
}

Check check_router(const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  if (auto e = check_matrix(logits, "src0 (logits)", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(ids, "dst (ids)", format::GgmlType::I32)) return e;
  if (auto e = check_matrix(weights, "src2 (weights)", format::GgmlType::F32)) return e;
  const int k = op.i[0];
  const int64_t n_expert = logits.ne[0];
  if (k <= 0 || k > n_expert) return "k " + std::to_string(k) + " must be within 1.." + std::to_string(n_expert);
  if (op.i[1] != 0 && op.i[1] != 1) return "gating " + std::to_string(op.i[1]) + " (known: 0 softmax, 1 sigmoid)";
  if (ids.ne[0] != k || ids.ne[1] != logits.ne[1] || weights.ne[0] != k || weights.ne[1] != logits.ne[1]) {
    return std::string("dst and src2 must be [k, n_tok]");
  }
  if (bias.data != nullptr) {
    if (auto e = check_rows(bias, "src1 (bias)", format::GgmlType::F32)) return e;
    if (bias.ne[0] != n_expert || row_count(bias) != 1) return std::string("src1 (bias) must be one row of n_expert");
  }
  return std::nullopt;
}

void run_router(Context& ctx, const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  const int k = op.i[0];
  const bool sigmoid = op.i[1] == 1, normalize = op.i[2] != 0;
  const float wscale = op.f[0];
  const int64_t n = logits.ne[0];
  const auto* b = static_cast<const float*>(bias.data);
  for_items(ctx, logits.ne[1], n * 8, [&](int64_t lo, int64_t hi) {
    std::vector<float> prob(static_cast<size_t>(n)), score(static_cast<size_t>(n));
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t t = lo; t < hi; ++t) {
      const float* x = row_ptr<const float>(logits, t);
      if (sigmoid) {
        sigmoid_row(x, prob.data(), n);
      } else {
        softmax_row(x, 1.0f, prob.data(), n);
      }
      for (int64_t i = 0; i < n; ++i) score[static_cast<size_t>(i)] = b != nullptr ? prob[static_cast<size_t>(i)] + b[i] : prob[static_cast<size_t>(i)];
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t c) {
        const float sa = rank_key(score[static_cast<size_t>(a)]), sc = rank_key(score[static_cast<size_t>(c)]);
        return sa > sc || (sa == sc && a < c);
      });
      int32_t* id_out = row_ptr<int32_t>(ids, t);
      float* w_out = row_ptr<float>(weights, t);
      float sum = 0.0f;
      for (int j = 0; j < k; ++j) {
        id_out[j] = order[static_cast<size_t>(j)];
        w_out[j] = prob[static_cast<size_t>(order[static_cast<size_t>(j)])];
        sum = sum + w_out[j];
      }
      for (int j = 0; j < k; ++j) {
        if (normalize) w_out[j] = w_out[j] / sum;
        w_out[j] = w_out[j] * wscale;
      }
    }
  });
}

}  // namespace strata::cpu
