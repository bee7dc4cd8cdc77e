// ADD, MUL (src1 of src0's shape or one row used for every row) and SWIGLU (canonical: silu_c(src0) * src1),
// element by element, each result the reference's rounded float operations with x86's NaN bits
// (canonical_math.cuh), so the bytes match the CPU's. GELU (backend 1.7, gelu.cuh): i[0] = 0 the tanh form in float
// (with canonical_double the reference's double, gelu_rows_f64ref), i[0] = 1 ggml's f16 table (the reference's own,
// uploaded by the context: its bits in both modes). dst may be src0 or src1 (in place): each element is read before
// it is written, by the same thread. fuse_swiglu_q8: SWIGLU read next by a MUL_MAT (a shared expert's down product)
// also writes its rows' Q8_1 copy, as fuse_attention_q8 does for ATTENTION.
#include <cstdint>
#include <string>

#include "act_quant.cuh"
#include "canonical_math.cuh"
#include "gelu.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 256;

enum class Elementwise { Add, Mul, Swiglu };

struct RowsArgs {
  const char* a;
  const char* b;
  char* dst;
  uint64_t a_stride, b_stride, d_stride;  // b_stride 0: src1 is one broadcast row
  int64_t n, total;                       // values per row, values in all
};

template <Elementwise kOp>
__global__ void elementwise_rows(RowsArgs args) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < args.total; i += step) {
    const int64_t r = i / args.n, c = i % args.n;
    const float x = reinterpret_cast<const float*>(args.a + static_cast<uint64_t>(r) * args.a_stride)[c];
    const float y = reinterpret_cast<const float*>(args.b + static_cast<uint64_t>(r) * args.b_stride)[c];
    float v;
    if constexpr (kOp == Elementwise::Add) {
      v = add_x86(x, y);
    } else if constexpr (kOp == Elementwise::Mul) {
      v = mul_x86(x, y);
    } else {
      v = swiglu_c(x, y);
    }
    reinterpret_cast<float*>(args.dst + static_cast<uint64_t>(r) * args.d_stride)[c] = v;
  }
}

// SWIGLU and its rows' Q8_1 copy (the bytes launch_quantize_q8_1 writes): n a multiple of 32, so each warp holds
// one Q8_1 block's 32 values (a warp past the end leaves whole).
__global__ void swiglu_q8_rows(RowsArgs args, unsigned char* q8) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= args.total) return;
  const int64_t r = i / args.n, c = i % args.n;
  const float x = reinterpret_cast<const float*>(args.a + static_cast<uint64_t>(r) * args.a_stride)[c];
  const float y = reinterpret_cast<const float*>(args.b + static_cast<uint64_t>(r) * args.b_stride)[c];
  const float v = swiglu_c(x, y);
  reinterpret_cast<float*>(args.dst + static_cast<uint64_t>(r) * args.d_stride)[c] = v;
  group_store_q8_1(v, static_cast<int>(c % 32), q8 + static_cast<uint64_t>(r * (args.n / 32) + c / 32) * kQ8Bytes);
}

// GELU over rows of n values (total values in all), i[0] = kTable: 0 the tanh form in float, 1 ggml's f16 table.
struct GeluArgs {
  const char* x;
  char* dst;
  const float* table;  // kTable 1: the context's copy of format::gelu_f16_table
  uint64_t x_stride, d_stride;
  int64_t n, total;
};

template <int kTable>
__global__ void gelu_rows(GeluArgs args) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < args.total; i += step) {
    const int64_t r = i / args.n, c = i % args.n;
    const float x = reinterpret_cast<const float*>(args.x + static_cast<uint64_t>(r) * args.x_stride)[c];
    float v;
    if constexpr (kTable == 1) {
      v = gelu_f16_table(x, args.table);
    } else {
      v = gelu_tanh_f(x);
    }
    reinterpret_cast<float*>(args.dst + static_cast<uint64_t>(r) * args.d_stride)[c] = v;
  }
}

// i[0] = 0 under canonical_double.
__global__ void gelu_rows_f64ref(GeluArgs args) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < args.total; i += step) {
    const int64_t r = i / args.n, c = i % args.n;
    const float x = reinterpret_cast<const float*>(args.x + static_cast<uint64_t>(r) * args.x_stride)[c];
    reinterpret_cast<float*>(args.dst + static_cast<uint64_t>(r) * args.d_stride)[c] = gelu_tanh_f64ref(x);
  }
}

unsigned grid_blocks(int64_t total) {
  const int64_t want = (total + kBlock - 1) / kBlock;
  return static_cast<unsigned>(want < 65536 ? want : 65536);
}

Check check_same_rows(const strata_op& op, bool allow_broadcast) {
  const strata_tensor &a = op.src[0], &b = op.src[1], &d = op.dst;
  if (auto e = format::check_rows(a, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(b, "src1", GgmlType::F32)) return e;
  if (auto e = format::check_rows(d, "dst", GgmlType::F32)) return e;
  const bool same = b.ne[0] == a.ne[0] && format::row_count(b) == format::row_count(a);
  const bool row = allow_broadcast && b.ne[0] == a.ne[0] && format::row_count(b) == 1;
  if (!same && !row) {
    return std::string(allow_broadcast ? "src1 must have src0's shape or be one row of src0's length"
                                       : "src1 must have src0's shape");
  }
  if (d.ne[0] != a.ne[0] || format::row_count(d) != format::row_count(a)) {
    return std::string("dst must have src0's shape");
  }
  return std::nullopt;
}

template <Elementwise kOp>
void launch(Context& ctx, const strata_op& op, const char* what) {
  const strata_tensor &a = op.src[0], &b = op.src[1], &d = op.dst;
  const int64_t rows = format::row_count(a);
  const bool broadcast = format::row_count(b) == 1 && rows > 1;
  RowsArgs args{static_cast<const char*>(a.data),
                static_cast<const char*>(b.data),
                static_cast<char*>(d.data),
                a.nb[1],
                broadcast ? 0 : b.nb[1],
                d.nb[1],
                a.ne[0],
                a.ne[0] * rows};
  elementwise_rows<kOp><<<grid_blocks(args.total), kBlock, 0, ctx.stream()>>>(args);
  check_launch(what);
}

}  // namespace

Check check_binary(const strata_op& op) { return check_same_rows(op, true); }

void run_binary(Context& ctx, const strata_op& op) {
  if (op.kind == STRATA_OP_MUL) {
    launch<Elementwise::Mul>(ctx, op, "MUL");
  } else {
    launch<Elementwise::Add>(ctx, op, "ADD");
  }
}

Check check_swiglu(const strata_op& op) { return check_same_rows(op, false); }

void run_swiglu(Context& ctx, const strata_op& op) { launch<Elementwise::Swiglu>(ctx, op, "SWIGLU"); }

size_t fuse_swiglu_q8(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const strata_op& op = ops[i];
  if (op.kind != STRATA_OP_SWIGLU || i + 1 >= n) return 0;
  const strata_tensor &a = op.src[0], &b = op.src[1], &d = op.dst;
  const int64_t rows = format::row_count(a);
  if (format::row_count(b) != rows || !quantized_next(ops[i + 1], d)) return 0;  // no broadcast row
  const int64_t nv = d.ne[0];
  forget_quantized_writes(ctx, ops + i, 1);
  auto* q8 = static_cast<unsigned char*>(
      ctx.scratch(ScratchSlot::ActQ8, static_cast<uint64_t>(nv / 32) * kQ8Bytes * static_cast<uint64_t>(rows)));
  const RowsArgs args{static_cast<const char*>(a.data), static_cast<const char*>(b.data), static_cast<char*>(d.data),
                      a.nb[1], b.nb[1], d.nb[1], nv, nv * rows};
  swiglu_q8_rows<<<static_cast<unsigned>((args.total + kBlock - 1) / kBlock), kBlock, 0, ctx.stream()>>>(args, q8);
  check_launch("SWIGLU (with its Q8_1 copy)");
  ctx.quantized() = {d.data, nv, rows, d.nb[1]};
  return 1;
}

Check check_gelu(const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  if (auto e = format::check_rows(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(d, "dst", GgmlType::F32)) return e;
  if (reinterpret_cast<uintptr_t>(x.data) % sizeof(float) != 0 || reinterpret_cast<uintptr_t>(d.data) % sizeof(float) != 0) {
    return std::string("src0 or dst data is not 4-byte aligned");
  }
  for (int k = 0; k < 4; ++k) {
    if (d.ne[k] != x.ne[k]) return std::string("dst must have src0's shape");
  }
  if (op.i[0] != 0 && op.i[0] != 1) {
    return "i[0] is " + std::to_string(op.i[0]) + " (known: 0 the tanh form, 1 ggml's f16 table)";
  }
  return std::nullopt;
}

void run_gelu(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  // enqueue uploads the table before the list runs; a run outside enqueue (none now) uploads it here.
  const float* table = op.i[0] == 1 ? (ctx.gelu_table() != nullptr ? ctx.gelu_table() : ctx.upload_gelu_table()) : nullptr;
  const GeluArgs args{static_cast<const char*>(x.data), static_cast<char*>(d.data), table, x.nb[1], d.nb[1], x.ne[0],
                      x.ne[0] * format::row_count(x)};
  const unsigned blocks = grid_blocks(args.total);
  if (op.i[0] == 1) {
    gelu_rows<1><<<blocks, kBlock, 0, ctx.stream()>>>(args);
  } else if (ctx.options().canonical_double) {
    gelu_rows_f64ref<<<blocks, kBlock, 0, ctx.stream()>>>(args);
  } else {
    gelu_rows<0><<<blocks, kBlock, 0, ctx.stream()>>>(args);
  }
  check_launch("GELU");
}

}  // namespace strata::gpu
