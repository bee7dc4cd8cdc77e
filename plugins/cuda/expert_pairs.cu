// The kernels of the expert pipeline (expert_pairs.cuh): pair matvecs (quantized and float weights), and the
// per-token sum of weighted rows.
#include "act_quant.cuh"
#include "expert_pairs.cuh"
#include "matvec.cuh"
#include "ops.hpp"
#include "pair_rows.cuh"
#include "strata/format/types.hpp"

namespace strata::gpu {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kThreads = kWarp * kRowsPerBlock;
constexpr int kFloatRowsPerBlock = kThreads / kAccumulators;

// One matrix (gate, up or down) of every item's expert against the item's activation rows.
struct PairPass {
  const PairItem* items;
  const uint32_t* n_items;
  int which;                   // 0 gate, 1 up, 2 down
  int rows;                    // output rows of the matrix
  int64_t n_in;                // values per weight row
  uint64_t w_stride;           // bytes per weight row
  const unsigned char* act_q;  // Q8_1 activation rows (quantized weights), n_in / 32 blocks each
  const float* act_f;          // float activation rows (float weights), act_f_stride floats apart
  int64_t act_f_stride;
  bool act_by_pair;            // activation row of a pair: its pair index (down) or its token (gate, up)
  float* out;                  // `rows` floats per pair, out_stride floats apart
  int64_t out_stride;
  const float* pair_weight;    // when set, the output is pair_weight[pair] * (dot + bias)
  const float* bias;           // nullptr, or the form's bias of this matrix: `rows` floats per expert id
};

__device__ inline uint32_t act_row_of(const PairPass& p, const PairItem& it, int t) {
  return p.act_by_pair ? it.pair[t] : it.token[t];
}

template <int NT>
__device__ inline void write_pair_outputs(const PairPass& p, const PairItem& it, int row, int n, const float (&y)[NT]) {
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t < n) {
      const uint32_t pair = it.pair[t];
      const float yb = add_bias(y[t], p.bias, it.expert, p.rows, row);
      const float v = p.pair_weight != nullptr ? p.pair_weight[pair] * yb : yb;
      p.out[static_cast<int64_t>(pair) * p.out_stride + row] = v;
    }
  }
}

template <class Dec, int NT>
__global__ void __launch_bounds__(kThreads) pair_q_kernel(PairPass p) {
  if (blockIdx.y >= *p.n_items) return;
  const PairItem& it = p.items[blockIdx.y];
  const int row = static_cast<int>(blockIdx.x) * kRowsPerBlock + static_cast<int>(threadIdx.x) / kWarp;
  if (row >= p.rows) return;  // the whole warp leaves together
  const int n = static_cast<int>(it.n);
  const int n_spans = static_cast<int>(p.n_in / 32);
  const uint64_t act_row = static_cast<uint64_t>(n_spans) * kQ8BlockBytes;
  const unsigned char* a[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) a[t] = p.act_q + act_row_of(p, it, t < n ? t : 0) * act_row;
  float y[NT];
  warp_dot_q<Dec, NT>(it.mat[p.which] + static_cast<uint64_t>(row) * p.w_stride, n_spans, a, n, y);
  if (threadIdx.x % kWarp == 0) write_pair_outputs<NT>(p, it, row, n, y);
}

template <FloatWeight W, int NT>
__global__ void __launch_bounds__(kThreads) pair_f_kernel(PairPass p) {
  if (blockIdx.y >= *p.n_items) return;
  const PairItem& it = p.items[blockIdx.y];
  const int group_row = static_cast<int>(blockIdx.x) * kFloatRowsPerBlock + static_cast<int>(threadIdx.x) / kAccumulators;
  const int row = group_row < p.rows ? group_row : p.rows - 1;  // every lane stays for the shuffles
  const int n = static_cast<int>(it.n);
  const float* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = p.act_f + static_cast<int64_t>(act_row_of(p, it, t < n ? t : 0)) * p.act_f_stride;
  float y[NT];
  group8_dot_f<W, NT>(it.mat[p.which] + static_cast<uint64_t>(row) * p.w_stride, p.n_in, xs, n, y);
  if (group_row < p.rows && threadIdx.x % kAccumulators == 0) write_pair_outputs<NT>(p, it, row, n, y);
}

// dst row t = token t's weighted rows in ascending expert id: the first, then + each next (zeros for none); a pair
// computed elsewhere adds src3's column (pair_rows.cuh).
__global__ void combine_kernel(const float* rows, int64_t rows_stride, const float* pre, int64_t pre_stride,
                               int64_t n_embd, const uint32_t* tok_begin, const uint32_t* tok_count,
                               const uint32_t* tok_pairs, float* dst, int64_t dst_stride) {
  const int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= n_embd) return;
  const uint32_t t = blockIdx.y;
  const uint32_t begin = tok_begin[t], count = tok_count[t];
  float acc = 0.0f;
  for (uint32_t i = 0; i < count; ++i) {
    const float v = pair_row(tok_pairs[begin + i], d, rows, rows_stride, pre, pre_stride);
    acc = i == 0 ? v : acc + v;
  }
  dst[static_cast<int64_t>(t) * dst_stride + d] = acc;
}

unsigned blocks_for(int64_t items, int per_block) { return static_cast<unsigned>((items + per_block - 1) / per_block); }

void launch_pass(const PairPass& p, uint32_t wtype, int pairs_per_item, unsigned max_items, cudaStream_t stream) {
  if (max_items == 0) return;
  const bool floating = with_float_weight(wtype, [&](auto wt) {
    with_tokens_per_pass(pairs_per_item, [&](auto nt) {
      const dim3 grid(blocks_for(p.rows, kFloatRowsPerBlock), max_items);
      pair_f_kernel<decltype(wt)::value, decltype(nt)::value><<<grid, kThreads, 0, stream>>>(p);
      check_launch("expert rows (float weights)");
    });
  });
  if (floating) return;
  with_decoder(wtype, [&](auto dec) {
    with_tokens_per_pass(pairs_per_item, [&](auto nt) {
      const dim3 grid(blocks_for(p.rows, kRowsPerBlock), max_items);
      pair_q_kernel<decltype(dec), decltype(nt)::value><<<grid, kThreads, 0, stream>>>(p);
      check_launch("expert rows");
    });
  });
}

bool is_float_type(uint32_t type) { return with_float_weight(type, [](auto) {}); }

}  // namespace

int expert_weight_alignment(uint32_t type) {
  if (is_float_type(type)) return static_cast<int>(format::traits(static_cast<GgmlType>(type)).block_bytes);
  return decoder_alignment(type);
}

void run_expert_plan(Context& ctx, const ExpertPlan& plan) {
  cudaStream_t stream = ctx.stream();
  const uint64_t n_pairs = static_cast<uint64_t>(plan.n_pairs);
  const bool gate_up_quantized = !is_float_type(plan.gate_type) || !is_float_type(plan.up_type);
  const bool down_quantized = !is_float_type(plan.down_type);

  const unsigned char* xq = nullptr;
  if (gate_up_quantized) {
    const uint64_t bytes = static_cast<uint64_t>(plan.n_embd / 32) * kQ8BlockBytes * static_cast<uint64_t>(plan.n_tok);
    void* buf = ctx.scratch(ScratchSlot::ActQ8, bytes);
    QuantizedActivation& cached = ctx.quantized();
    const uint64_t stride_bytes = static_cast<uint64_t>(plan.x_stride) * sizeof(float);
    if (cached.src != plan.x || cached.n_in != plan.n_embd || cached.n_tok != plan.n_tok || cached.row_stride != stride_bytes) {
      launch_quantize_q8_1(plan.x, plan.x_stride, plan.n_embd, plan.n_tok, buf, stream);
      cached = {plan.x, plan.n_embd, plan.n_tok, stride_bytes};
    }
    xq = static_cast<const unsigned char*>(buf);
  }

  // Hidden buffers: g and u per pair, h as floats when down is a float matrix, h as Q8_1 otherwise.
  const uint64_t hidden = n_pairs * static_cast<uint64_t>(plan.n_ff);
  auto* gu = static_cast<float*>(ctx.scratch(ScratchSlot::MoeHidden, (down_quantized ? 2 : 3) * hidden * sizeof(float)));
  float* g = gu;
  float* u = gu + hidden;
  float* h = down_quantized ? nullptr : gu + 2 * hidden;
  void* hq = down_quantized
                 ? ctx.scratch(ScratchSlot::MoeHiddenQ8, n_pairs * static_cast<uint64_t>(plan.n_ff / 32) * kQ8BlockBytes)
                 : nullptr;

  PairPass p{};
  p.items = plan.items;
  p.n_items = plan.n_items;
  p.act_f = plan.x;
  p.act_f_stride = plan.x_stride;
  p.act_q = xq;
  p.act_by_pair = false;
  p.rows = static_cast<int>(plan.n_ff);
  p.out_stride = plan.n_ff;
  p.n_in = plan.n_embd;
  p.pair_weight = nullptr;
  const auto row_stride = [&](uint32_t type, int64_t n) { return format::row_bytes(static_cast<GgmlType>(type), static_cast<uint64_t>(n)); };

  p.which = 0;
  p.w_stride = row_stride(plan.gate_type, plan.n_embd);
  p.out = g;
  p.bias = plan.form.bias.gate;
  launch_pass(p, plan.gate_type, plan.pairs_per_item, plan.max_items, stream);
  p.which = 1;
  p.w_stride = row_stride(plan.up_type, plan.n_embd);
  p.out = u;
  p.bias = plan.form.bias.up;
  launch_pass(p, plan.up_type, plan.pairs_per_item, plan.max_items, stream);

  launch_swiglu(g, u, plan.n_ff, plan.n_pairs, plan.form.act, h, hq, stream);

  p.which = 2;
  p.w_stride = row_stride(plan.down_type, plan.n_ff);
  p.rows = static_cast<int>(plan.n_embd);
  p.n_in = plan.n_ff;
  p.act_q = static_cast<const unsigned char*>(hq);
  p.act_f = h;
  p.act_f_stride = plan.n_ff;
  p.act_by_pair = true;
  p.out = plan.rows;
  p.out_stride = plan.rows_stride;
  p.pair_weight = plan.pair_weight;
  p.bias = plan.form.bias.down;
  launch_pass(p, plan.down_type, plan.pairs_per_item, plan.max_items, stream);

  if (plan.n_tok == 0 || plan.dst == nullptr) return;
  constexpr int kCombineThreads = 128;
  const dim3 grid(blocks_for(plan.n_embd, kCombineThreads), static_cast<unsigned>(plan.n_tok));
  combine_kernel<<<grid, kCombineThreads, 0, stream>>>(plan.rows, plan.rows_stride, plan.pre, plan.pre_stride,
                                                       plan.n_embd, plan.tok_begin, plan.tok_count, plan.tok_pairs,
                                                       plan.dst, plan.dst_stride);
  check_launch("expert sums");
}

}  // namespace strata::gpu
