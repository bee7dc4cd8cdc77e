// ADD, MUL (src1 the same shape or one broadcast row), SWIGLU (canonical: silu_c(src0) * src1) and GELU (backend
// 1.7, the vision encoder's), the tanh form gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))):
// - i[0] = 0, in float as x / (1 + exp(-t)), t = 2 sqrt(2/pi) x (1 + 0.044715 x^2) (the same function: 0.5 (1 +
//   tanh(t/2)) is the logistic of t), which keeps its relative accuracy where 1 + tanh would cancel (x < 0). t is
//   formed as a float pair (hi + lo, error-free products and sums), exp_c takes -hi and the result is multiplied
//   by (1 - lo), so the value is within a few ulp of the exact one for -10 <= x; below -10 it is x * 0 (-0, NaN
//   for -inf), as the reference's double gives.
// - i[0] = 1 (ggml's f16 table): f16(gelu(f16(x))) for -10 < x < 10, 0 at or below -10, x at or above (and NaN):
//   a table over the 65536 halves (format::gelu_f16_table, the reference's too), so the bits are
//   the reference's; x goes to f16 by vcvtps2ph (round to nearest even, as format::fp32_to_fp16).
#include <cmath>
#include <cstring>
#include <vector>

#include "ops.hpp"
#include "simd.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/gelu_table.hpp"
#include "tensor_view.hpp"
#include "vec_math.hpp"

namespace strata::cpu {
namespace {

// gelu's t = a x + b x^3 as a float pair hi + lo: a = 2 sqrt(2/pi), b = a * 0.044715, each split in two floats.
STRATA_INLINE_AVX2 void gelu_t8(__m256 x, __m256* hi, __m256* lo) {
  const __m256 a_hi = f32_splat_bits(0x3fcc422au), a_lo = f32_splat_bits(0xb342bc9bu);  // 1.5957691216057307
  const __m256 b_hi = f32_splat_bits(0x3d922279u), b_lo = f32_splat_bits(0x3124d8b5u);  // 0.07135481627260025
  // s = x^2 exactly as s + s_lo.
  const __m256 s = _mm256_mul_ps(x, x);
  const __m256 s_lo = _mm256_fmsub_ps(x, x, s);
  // q = b x^2: q + q_lo, dropping only products of two small parts.
  const __m256 q = _mm256_mul_ps(b_hi, s);
  const __m256 q_lo = _mm256_add_ps(_mm256_fmsub_ps(b_hi, s, q), _mm256_add_ps(_mm256_mul_ps(b_hi, s_lo), _mm256_mul_ps(b_lo, s)));
  // r = a + q (two-sum), its small parts gathered in r_lo.
  const __m256 r = _mm256_add_ps(a_hi, q);
  const __m256 v = _mm256_sub_ps(r, a_hi);
  const __m256 sum_err = _mm256_add_ps(_mm256_sub_ps(a_hi, _mm256_sub_ps(r, v)), _mm256_sub_ps(q, v));
  const __m256 r_lo = _mm256_add_ps(sum_err, _mm256_add_ps(a_lo, q_lo));
  // t = x r.
  *hi = _mm256_mul_ps(x, r);
  *lo = _mm256_add_ps(_mm256_fmsub_ps(x, r, *hi), _mm256_mul_ps(x, r_lo));
}

STRATA_INLINE_AVX2 __m256 gelu8(__m256 x) {
  const __m256 ten = _mm256_set1_ps(10.0f), neg_ten = _mm256_set1_ps(-10.0f);
  // Inside [-10, 10] |t| < 87.4, so exp_c's result stays finite; x outside takes the clamped lanes' t (at 10 the
  // exponential is below 2^-125: x / 1 = x).
  const __m256 xc = _mm256_min_ps(ten, _mm256_max_ps(neg_ten, x));
  __m256 hi, lo;
  gelu_t8(xc, &hi, &lo);
  __m256 e = exp_c8(_mm256_xor_ps(hi, _mm256_set1_ps(-0.0f)));
  e = _mm256_fnmadd_ps(e, lo, e);  // exp(-hi - lo) = exp(-hi) (1 - lo) to second order in lo (|lo| < 2^-16)
  const __m256 y = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(y, _mm256_mul_ps(x, _mm256_setzero_ps()), _mm256_cmp_ps(x, neg_ten, _CMP_LT_OQ));
}

// The f16 table every backend reads (format::gelu_f16_table: float, as ggml builds its own).
const float* gelu_f16_table() { return format::gelu_f16_table(); }

STRATA_INLINE_AVX2 __m256 gelu_table8(__m256 x, const float* table) {
  const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __m256 y = _mm256_i32gather_ps(table, h, 4);
  y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_NLT_UQ));  // x >= 10, NaN: x
  return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
}

STRATA_INLINE_AVX2 __m256 gelu_any8(__m256 x, const float* table) {
  return table != nullptr ? gelu_table8(x, table) : gelu8(x);
}

// One row of GELU (out may be x); table NULL: i[0] = 0. The last n % 8 values go through the same lanes.
STRATA_AVX2 void gelu_row(const float* x, const float* table, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, gelu_any8(_mm256_loadu_ps(x + i), table));
  if (i < n) {
    alignas(32) float buf[8] = {};
    const auto rest = static_cast<size_t>(n - i);
    std::memcpy(buf, x + i, rest * sizeof(float));
    _mm256_store_ps(buf, gelu_any8(_mm256_load_ps(buf), table));
    std::memcpy(out + i, buf, rest * sizeof(float));
  }
}

template <bool kMul>
STRATA_AVX2 void binary_row(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i), y = _mm256_loadu_ps(b + i);
    _mm256_storeu_ps(out + i, kMul ? _mm256_mul_ps(x, y) : _mm256_add_ps(x, y));
  }
  for (; i < n; ++i) out[i] = kMul ? a[i] * b[i] : a[i] + b[i];
}

Check check_same_rows(const strata_op& op, bool allow_broadcast) {
  const strata_tensor &a = op.src[0], &b = op.src[1], &d = op.dst;
  if (auto e = check_rows(a, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(b, "src1", format::GgmlType::F32)) return e;
  if (auto e = check_rows(d, "dst", format::GgmlType::F32)) return e;
  if (b.ne[0] != a.ne[0] || (row_count(b) != row_count(a) && !(allow_broadcast && row_count(b) == 1))) {
    return std::string(allow_broadcast ? "src1 must have src0's shape or be one row of it"
                                       : "src1 must have src0's shape");
  }
  if (d.ne[0] != a.ne[0] || row_count(d) != row_count(a)) return std::string("dst shape differs from src0");
  return std::nullopt;
}

}  // namespace

Check check_binary(const strata_op& op) { return check_same_rows(op, true); }

void run_binary(Context& ctx, const strata_op& op) {
  const strata_tensor &a = op.src[0], &b = op.src[1], &d = op.dst;
  const int64_t n = a.ne[0];
  const bool broadcast = row_count(b) == 1;
  const bool mul = op.kind == STRATA_OP_MUL;
  for_items(ctx, row_count(a), n, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* y = row_ptr<const float>(b, broadcast ? 0 : r);
      if (mul) {
        binary_row<true>(row_ptr<const float>(a, r), y, row_ptr<float>(d, r), n);
      } else {
        binary_row<false>(row_ptr<const float>(a, r), y, row_ptr<float>(d, r), n);
      }
    }
  });
}

Check check_swiglu(const strata_op& op) { return check_same_rows(op, false); }

void run_swiglu(Context& ctx, const strata_op& op) {
  const strata_tensor &g = op.src[0], &u = op.src[1], &d = op.dst;
  const int64_t n = g.ne[0];
  for_items(ctx, row_count(g), n * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      swiglu_row(row_ptr<const float>(g, r), row_ptr<const float>(u, r), row_ptr<float>(d, r), n);
    }
  });
}

Check check_gelu(const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  if (auto e = check_rows(x, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(d, "dst", format::GgmlType::F32)) return e;
  for (int k = 0; k < 4; ++k) {
    if (d.ne[k] != x.ne[k]) return std::string("dst shape differs from src0");
  }
  if (op.i[0] != 0 && op.i[0] != 1) {
    return "GELU i[0] " + std::to_string(op.i[0]) + " (known: 0 the tanh form, 1 ggml's f16 table)";
  }
  return check_in_place(x, d);
}

void run_gelu(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  const int64_t n = x.ne[0];
  const float* table = op.i[0] == 1 ? gelu_f16_table() : nullptr;
  for_items(ctx, row_count(x), n * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) gelu_row(row_ptr<const float>(x, r), table, row_ptr<float>(d, r), n);
  });
}

}  // namespace strata::cpu
