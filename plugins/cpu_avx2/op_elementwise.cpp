// ADD, MUL (src1 the same shape or one broadcast row) and SWIGLU (canonical: silu_c(src0) * src1).
#include "ops.hpp"
#include "simd.hpp"
#include "tensor_view.hpp"
#include "vec_math.hpp"

namespace strata::cpu {
namespace {

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

}  // namespace strata::cpu
