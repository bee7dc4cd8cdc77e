// MUL_MAT through the tiled product (mul_mat_tiled.cuh): Q8_1 columns through the context's cache, as
// run_mul_mat does, then one tiled launch with the window's tokens as the columns.
#include "act_quant.cuh"
#include "matvec.cuh"
#include "mma_tile.cuh"
#include "mul_mat_tiled.cuh"
#include "tiled_product.cuh"

namespace strata::gpu {

namespace {
constexpr int64_t kMinTokens = 9;  // up to 8 tokens the warp-per-row kernels read each weight row once already
}  // namespace

bool run_mul_mat_tiled(Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const int64_t n_in = w.ne[0], n_tok = x.ne[1];
  if (n_tok < kMinTokens || !has_tiled_kernel(w.type, ctx)) return false;

  const uint64_t act_bytes = static_cast<uint64_t>(n_in / 32) * kQ8BlockBytes * static_cast<uint64_t>(n_tok);
  void* act = ctx.scratch(ScratchSlot::ActQ8, act_bytes);
  QuantizedActivation& cached = ctx.quantized();
  const auto* xdata = static_cast<const float*>(x.data);
  if (cached.src != x.data || cached.n_in != n_in || cached.n_tok != n_tok || cached.row_stride != x.nb[1]) {
    launch_quantize_q8_1(xdata, static_cast<int64_t>(x.nb[1] / sizeof(float)), n_in, n_tok, act, ctx.stream());
    cached = {x.data, n_in, n_tok, x.nb[1]};
  }

  TiledJob job{};
  job.w = static_cast<const uint8_t*>(w.data);
  job.w_stride = w.nb[1];
  job.rows = static_cast<int>(w.ne[1]);
  job.n_spans = static_cast<int>(n_in / 32);
  job.act = static_cast<const unsigned char*>(act);
  job.out = static_cast<float*>(d.data);
  job.out_stride = static_cast<int64_t>(d.nb[1] / sizeof(float));
  job.n_cols = static_cast<int>(n_tok);
  launch_tiled(job, w.type, static_cast<unsigned>((n_tok + kTileCols - 1) / kTileCols), ctx.stream());
  return true;
}

}  // namespace strata::gpu
