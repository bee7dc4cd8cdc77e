// Fusion: the residual add and the norm after it, per row in one block of 256 threads,
//   ADD(x <- x + out)  RMS_NORM(xn <- x, w)            (every layer's attention and FFN inputs, the output norm)
// and the normed rows' Q8_1 copy when a MUL_MAT reads them next (q/k/v; the router, whose float weight leaves the
// copy to MOE_ROUTED; the output head) - also after a norm with no ADD before it (the first layer's). The copy is
// the bytes launch_quantize_q8_1 writes (act_quant.cuh's quantize_block_q8_1) into ScratchSlot::ActQ8, recorded in
// ctx.quantized(), so the MUL_MAT skips its own quantize launch. The sum is written too (it is the residual), and
// the arithmetic is the separate ops' (add_x86; rms_row.cuh's 256-lane order, which a 32-lane group's short-row
// path also follows, in float by default and in double with canonical_double), so the bytes are theirs.
#include <climits>

#include "act_quant.cuh"
#include "dependent_launch.cuh"
#include "fusion_match.hpp"
#include "ops.hpp"
#include "rms_row.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

struct AddNormArgs {
  const char* a;  // ADD: sum = a + b, written, then normed (the norm's input x is the sum)
  const char* b;
  char* sum;
  uint64_t a_stride, b_stride, s_stride;  // b_stride 0: b is one row for every row
  const char* x;                          // the norm's input rows
  uint64_t x_stride;
  const float* w;  // nullptr: no weight
  char* dst;
  uint64_t d_stride;
  int64_t n;
  float eps;
  unsigned char* q8;  // nullptr: no Q8_1 copy; else n / 32 blocks per row, rows one after another
};

template <class T>
__device__ __forceinline__ T* row_of(T* base, uint64_t stride, int64_t r) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(base) + static_cast<uint64_t>(r) * stride);
}

// kPer > 0: the row fits in registers (n <= 256 * kPer): every load is issued before the first use (no store
// between them), and the Q8_1 copy comes from registers: thread t holds values t + 256 s, so the 32 lanes of its
// group hold block (t / 32) + 8 s in order, one value each (group_store_q8_1). kPer == 0: any length, in loops.
// T is the norm's arithmetic (rms_row.cuh): float in add_norm_rows, double in add_norm_rows_f64ref
// (canonical_double), as op_rms_norm.cu's kernels in the same mode.
template <class T, bool kAdd, int kPer>
__device__ __forceinline__ void add_norm_row(const AddNormArgs& a) {
  __shared__ T lanes[kNormBlock + 1];
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const float* x = row_of(reinterpret_cast<const float*>(a.x), a.x_stride, r);
  float* y = row_of(reinterpret_cast<float*>(a.dst), a.d_stride, r);
  if constexpr (kPer > 0) {
    float v[kPer], wv[kPer];
    // The norm's weight is the model's: read before the previous kernel ends (dependent_launch.cuh).
#pragma unroll
    for (int s = 0; s < kPer; ++s) {
      const int64_t i = t + kNormBlock * s;
      wv[s] = a.w != nullptr && i < a.n ? a.w[i] : 0.0f;
    }
    wait_for_inputs();
    start_dependents();
    if constexpr (kAdd) {
      const float* pa = row_of(reinterpret_cast<const float*>(a.a), a.a_stride, r);
      const float* pb = row_of(reinterpret_cast<const float*>(a.b), a.b_stride, r);
      float va[kPer], vb[kPer];
#pragma unroll
      for (int s = 0; s < kPer; ++s) {
        const int64_t i = t + kNormBlock * s;
        va[s] = i < a.n ? pa[i] : 0.0f;
        vb[s] = i < a.n ? pb[i] : 0.0f;
      }
#pragma unroll
      for (int s = 0; s < kPer; ++s) v[s] = add_x86(va[s], vb[s]);
    } else {
#pragma unroll
      for (int s = 0; s < kPer; ++s) {
        const int64_t i = t + kNormBlock * s;
        v[s] = i < a.n ? x[i] : 0.0f;
      }
    }
    T acc = 0;
#pragma unroll
    for (int s = 0; s < kPer; ++s) {
      if (t + kNormBlock * s < a.n) acc = norm_accumulate(acc, v[s]);
    }
    if constexpr (kAdd) {
      float* ps = row_of(reinterpret_cast<float*>(a.sum), a.s_stride, r);
#pragma unroll
      for (int s = 0; s < kPer; ++s) {
        const int64_t i = t + kNormBlock * s;
        if (i < a.n) ps[i] = v[s];
      }
    }
    // Every thread has read its inputs before the barrier in the sum: y may be x or the sum.
    const T scale = rms_scale(norm_block_sum(acc, lanes), a.n, static_cast<T>(a.eps));
#pragma unroll
    for (int s = 0; s < kPer; ++s) {
      const int64_t i = t + kNormBlock * s;
      v[s] = rms_value_w(v[s], scale, a.w != nullptr, wv[s]);  // the weight already in a register
      if (i < a.n) y[i] = v[s];
    }
    if (a.q8 == nullptr) return;
    const int64_t blocks = a.n / 32;  // n is a multiple of 32 here: a group is wholly inside the row or past it
    unsigned char* q8 = a.q8 + static_cast<uint64_t>(r) * static_cast<uint64_t>(blocks) * kQ8Bytes;
#pragma unroll
    for (int s = 0; s < kPer; ++s) {
      const int64_t b = t / 32 + (kNormBlock / 32) * s;
      if (b < blocks) group_store_q8_1(v[s], t % 32, q8 + b * kQ8Bytes);
    }
  } else {
    wait_for_inputs();
    start_dependents();
    T acc = 0;
    if constexpr (kAdd) {
      const float* pa = row_of(reinterpret_cast<const float*>(a.a), a.a_stride, r);
      const float* pb = row_of(reinterpret_cast<const float*>(a.b), a.b_stride, r);
      float* ps = row_of(reinterpret_cast<float*>(a.sum), a.s_stride, r);
      for (int64_t i = t; i < a.n; i += kNormBlock) {
        const float v = add_x86(pa[i], pb[i]);
        ps[i] = v;
        acc = norm_accumulate(acc, v);
      }
    } else {
      for (int64_t i = t; i < a.n; i += kNormBlock) acc = norm_accumulate(acc, x[i]);
    }
    const T scale = rms_scale(norm_block_sum(acc, lanes), a.n, static_cast<T>(a.eps));
    // x[i] is this thread's own value (the sum it wrote); y may be x (in place): read before written, one thread.
    for (int64_t i = t; i < a.n; i += kNormBlock) y[i] = rms_value(x[i], scale, a.w, i);
    if (a.q8 == nullptr) return;
    __syncthreads();  // every thread's outputs are in the row before the quantizers read it
    const int64_t blocks = a.n / 32;
    for (int64_t b = t; b < blocks; b += kNormBlock) {
      float v[32];
#pragma unroll
      for (int k = 0; k < 32; ++k) v[k] = y[32 * b + k];
      uint32_t words[kQ8Words];
      quantize_block_q8_1(v, words);
      auto* out = reinterpret_cast<uint32_t*>(a.q8 + (static_cast<uint64_t>(r) * static_cast<uint64_t>(blocks) +
                                                      static_cast<uint64_t>(b)) * kQ8Bytes);
#pragma unroll
      for (int k = 0; k < kQ8Words; ++k) out[k] = words[k];
    }
  }
}

template <bool kAdd, int kPer>
__global__ void __launch_bounds__(kNormBlock) add_norm_rows(AddNormArgs a) {
  add_norm_row<float, kAdd, kPer>(a);
}
template <bool kAdd, int kPer>
__global__ void __launch_bounds__(kNormBlock) add_norm_rows_f64ref(AddNormArgs a) {
  add_norm_row<double, kAdd, kPer>(a);
}

template <bool kAdd, int kPer>
void launch_rows(const Context& ctx, const AddNormArgs& a, unsigned rows) {
  auto* kernel = add_norm_rows<kAdd, kPer>;
  if (ctx.options().canonical_double) kernel = add_norm_rows_f64ref<kAdd, kPer>;
  launch_dependent(ctx, kernel, rows, kNormBlock, 0, a);
}

// The launch for rows of n values: the register variant when the row fits (up to 16 values a thread: n <= 4096).
template <bool kAdd>
void launch_add_norm(const Context& ctx, const AddNormArgs& a, unsigned rows) {
  const int64_t per = (a.n + kNormBlock - 1) / kNormBlock;
  if (per <= 4) {
    launch_rows<kAdd, 4>(ctx, a, rows);
  } else if (per <= 8) {
    launch_rows<kAdd, 8>(ctx, a, rows);
  } else if (per <= 16) {
    launch_rows<kAdd, 16>(ctx, a, rows);
  } else {
    launch_rows<kAdd, 0>(ctx, a, rows);
  }
}

bool rows_apart(const strata_tensor& t, int64_t n) { return t.nb[1] >= static_cast<uint64_t>(n) * sizeof(float); }

}  // namespace

size_t fuse_add_norm(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const bool with_add = ops[i].kind == STRATA_OP_ADD && i + 1 < n && ops[i + 1].kind == STRATA_OP_RMS_NORM;
  if (!with_add && ops[i].kind != STRATA_OP_RMS_NORM) return 0;
  const strata_op& norm = ops[i + (with_add ? 1 : 0)];
  if (check_rms_norm(norm)) return 0;
  const strata_tensor &x = norm.src[0], &w = norm.src[1], &y = norm.dst;
  const int64_t nv = x.ne[0], rows = format::row_count(x);
  if (nv <= 0 || rows <= 0 || rows > INT_MAX || !rows_apart(x, nv) || !rows_apart(y, nv)) return 0;
  if (!same_or_disjoint(x, y) || !disjoint(w, y)) return 0;

  AddNormArgs a{};
  if (with_add) {
    const strata_op& add = ops[i];
    const strata_tensor &sa = add.src[0], &sb = add.src[1];
    if (check_binary(add) || !same_tensor(add.dst, x) || !rows_apart(sa, nv)) return 0;
    const bool broadcast = format::row_count(sb) == 1 && rows > 1;
    if (!all_same_or_disjoint({&sa, &x, &y}) || !disjoint(w, x)) return 0;
    if (broadcast ? !(disjoint(sb, x) && disjoint(sb, y)) : !(rows_apart(sb, nv) && all_same_or_disjoint({&sb, &x, &y}))) {
      return 0;
    }
    a.a = static_cast<const char*>(sa.data);
    a.b = static_cast<const char*>(sb.data);
    a.sum = static_cast<char*>(add.dst.data);
    a.a_stride = sa.nb[1];
    a.b_stride = broadcast ? 0 : sb.nb[1];
    a.s_stride = add.dst.nb[1];
  }
  const size_t used = with_add ? 2 : 1;
  const bool quantize = i + used < n && quantized_next(ops[i + used], y);
  if (!with_add && !quantize) return 0;  // a norm alone is the plain op

  a.x = static_cast<const char*>(x.data);
  a.x_stride = x.nb[1];
  a.w = static_cast<const float*>(w.data);
  a.dst = static_cast<char*>(y.data);
  a.d_stride = y.nb[1];
  a.n = nv;
  a.eps = norm.f[0];
  forget_quantized_writes(ctx, ops + i, used);
  if (quantize) {
    const uint64_t bytes = static_cast<uint64_t>(nv / 32) * kQ8Bytes * static_cast<uint64_t>(rows);
    a.q8 = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::ActQ8, bytes));
  }
  if (with_add) {
    launch_add_norm<true>(ctx, a, static_cast<unsigned>(rows));
  } else {
    launch_add_norm<false>(ctx, a, static_cast<unsigned>(rows));
  }
  check_launch(with_add ? "ADD + RMS_NORM (fused)" : "RMS_NORM + Q8_1 copy (fused)");
  if (quantize) ctx.quantized() = {y.data, nv, rows, y.nb[1]};
  return used;
}

}  // namespace strata::gpu
