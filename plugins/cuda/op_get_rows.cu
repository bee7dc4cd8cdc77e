// GET_ROWS: dst f32 [n_embd, n_tok] = rows src1[t] of the table src0, decoded exactly as dequantize_row decodes
// them (core/src/reference/op_get_rows.cpp): quantized tables through the span decoders (c_k * g_i, + b_k for
// offset types), F32 copied, F16 and BF16 converted exactly. The ids are device memory, so they cannot be checked
// before the kernel runs: a row for an id outside the table is written as NaNs instead of read out of bounds.
#include <cstdint>
#include <string>

#include "matvec.cuh"
#include "ops.hpp"
#include "quant_decode.cuh"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

constexpr int kThreads = 128;

__device__ inline bool valid_id(int32_t id, int64_t n_rows) { return id >= 0 && id < n_rows; }

// One thread per 32-value span of one output row.
template <class Dec>
__global__ void __launch_bounds__(kThreads) get_rows_q_kernel(const uint8_t* table, uint64_t row_stride,
                                                              int64_t n_rows, const int32_t* ids, int n_spans,
                                                              int n_tok, float* dst, int64_t dst_stride) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (index >= static_cast<int64_t>(n_spans) * n_tok) return;
  const int t = static_cast<int>(index / n_spans), j = static_cast<int>(index % n_spans);
  float* out = dst + static_cast<int64_t>(t) * dst_stride + 32 * j;
  const int32_t id = ids[t];
  if (!valid_id(id, n_rows)) {
#pragma unroll
    for (int i = 0; i < 32; ++i) out[i] = __int_as_float(0x7fc00000);
    return;
  }
  Span sp;
  decode_row_span<Dec>(table + static_cast<uint64_t>(id) * row_stride, j, sp);
#pragma unroll
  for (int i = 0; i < 32; ++i) out[i] = span_value<Dec>(sp, i);
}

// One thread per value.
template <FloatWeight W>
__global__ void __launch_bounds__(kThreads) get_rows_f_kernel(const uint8_t* table, uint64_t row_stride,
                                                              int64_t n_rows, const int32_t* ids, int64_t n,
                                                              int n_tok, float* dst, int64_t dst_stride) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (index >= n * n_tok) return;
  const int64_t t = index / n, i = index % n;
  const int32_t id = ids[t];
  dst[t * dst_stride + i] = valid_id(id, n_rows) ? load_weight<W>(table + static_cast<uint64_t>(id) * row_stride, i)
                                                 : __int_as_float(0x7fc00000);
}

unsigned blocks_for(int64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace

Check check_get_rows(const strata_op& op) {
  const strata_tensor &table = op.src[0], &ids = op.src[1], &d = op.dst;
  if (auto e = format::check_matrix(table, "src0 (table)")) return e;
  const int align = decoder_alignment(table.type);
  const bool is_float = with_float_weight(table.type, [](auto) {});
  if (align == 0 && !is_float) return "src0 (table) type " + format::type_name(table.type) + " has no GPU decoder";
  const int need = is_float ? static_cast<int>(format::traits(static_cast<GgmlType>(table.type)).block_bytes) : align;
  if ((reinterpret_cast<uintptr_t>(table.data) | table.nb[1]) % static_cast<unsigned>(need) != 0) {
    return "src0 (table) data or row stride is not a multiple of " + std::to_string(need) + " bytes";
  }
  if (auto e = format::check_rows(ids, "src1 (ids)", GgmlType::I32)) return e;
  if (format::row_count(ids) != 1) return std::string("src1 (ids) must be one row of ids");
  if (auto e = format::check_matrix(d, "dst", GgmlType::F32)) return e;
  if (d.ne[0] != table.ne[0] || d.ne[1] != ids.ne[0]) return std::string("dst shape is not [table row length, n_ids]");
  if ((reinterpret_cast<uintptr_t>(d.data) | d.nb[1]) % sizeof(float) != 0) return std::string("dst rows are not float-aligned");
  if (ids.ne[0] > INT32_MAX || table.ne[0] > INT32_MAX) return std::string("shape too large for the GPU grid");
  return std::nullopt;
}

void run_get_rows(Context& ctx, const strata_op& op) {
  const strata_tensor &table = op.src[0], &ids = op.src[1], &d = op.dst;
  const auto* data = static_cast<const uint8_t*>(table.data);
  const auto* id = static_cast<const int32_t*>(ids.data);
  const int n_tok = static_cast<int>(ids.ne[0]);
  const int64_t n = table.ne[0];
  auto* dst = static_cast<float*>(d.data);
  const int64_t dst_stride = static_cast<int64_t>(d.nb[1] / sizeof(float));
  if (n_tok == 0) return;
  const bool floating = with_float_weight(table.type, [&](auto wt) {
    get_rows_f_kernel<decltype(wt)::value><<<blocks_for(n * n_tok), kThreads, 0, ctx.stream()>>>(
        data, table.nb[1], table.ne[1], id, n, n_tok, dst, dst_stride);
    check_launch("GET_ROWS (float table)");
  });
  if (floating) return;
  with_decoder(table.type, [&](auto dec) {
    const int n_spans = static_cast<int>(n / 32);
    get_rows_q_kernel<decltype(dec)><<<blocks_for(static_cast<int64_t>(n_spans) * n_tok), kThreads, 0, ctx.stream()>>>(
        data, table.nb[1], table.ne[1], id, n_spans, n_tok, dst, dst_stride);
    check_launch("GET_ROWS");
  });
}

}  // namespace strata::gpu
