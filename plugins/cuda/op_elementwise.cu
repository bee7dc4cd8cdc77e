// ADD, MUL (src1 of src0's shape or one row used for every row) and SWIGLU (canonical: silu_c(src0) * src1),
// element by element, each result the reference's rounded float operations with x86's NaN bits
// (canonical_math.cuh), so the bytes match the CPU's. dst may be src0 or src1 (in place): each element is read
// before it is written, by the same thread.
#include <string>

#include "canonical_math.cuh"
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
  const int64_t want = (args.total + kBlock - 1) / kBlock;
  const auto blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  elementwise_rows<kOp><<<blocks, kBlock, 0, ctx.stream()>>>(args);
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

}  // namespace strata::gpu
