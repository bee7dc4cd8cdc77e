// MUL_MAT: dst [n_out, n_tok] = weight [n_in, n_out] x src1 [n_in, n_tok]. Quantized weights read the activation
// rows quantized once to Q8_1; float weights read them as floats. The pool's pieces are runs of output rows.
#include <vector>

#include "ops.hpp"
#include "pieces.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

namespace {
// Output ranges start on 16-row boundaries so that two workers never write one cache line of a dst row.
constexpr int64_t kRowAlign = 16;
}  // namespace

Check check_mul_mat(const Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  if (auto e = check_matrix(w, "src0 (weight)")) return e;
  if (auto e = check_matrix(x, "src1", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(d, "dst", format::GgmlType::F32)) return e;
  const KernelTable& k = ctx.kernels();
  const bool quant = w.type < kMaxTypeId && k.quant[w.type] != nullptr;
  const bool floating = w.type < kMaxTypeId && k.floating[w.type] != nullptr;
  if (!quant && !floating) return "no kernel for weight type " + type_name(w.type);
  if (quant && w.ne[0] % 32 != 0) return "quantized rows must be a multiple of 32 values";
  if (x.ne[0] != w.ne[0]) return "src1 rows have " + std::to_string(x.ne[0]) + " values, weight rows " + std::to_string(w.ne[0]);
  if (d.ne[0] != w.ne[1] || d.ne[1] != x.ne[1]) return "dst shape is not [weight rows, src1 rows]";
  if (d.nb[1] % sizeof(float) != 0) return "dst rows are not float-aligned";
  return std::nullopt;
}

void run_mul_mat(Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const int64_t n = w.ne[0], rows = w.ne[1];
  const int n_tok = static_cast<int>(x.ne[1]);
  const auto* wdata = static_cast<const unsigned char*>(w.data);
  auto* out = static_cast<float*>(d.data);
  const int64_t out_stride = static_cast<int64_t>(d.nb[1] / sizeof(float));
  ThreadPool& pool = ctx.pool();
  Scratch& s = ctx.scratch();
  const bool small = w.nb[1] * static_cast<uint64_t>(rows) * static_cast<uint64_t>(n_tok) < kSmallWorkBytes;
  const Pieces out_rows = cut(rows, w.nb[1] * static_cast<uint64_t>(n_tok), pool.parts(), kRowAlign);

  if (const QuantMatVec kernel = ctx.kernels().quant[w.type]) {
    s.act.resize(n_tok, n);
    auto* views = s.index.as<QuantRow>(static_cast<size_t>(n_tok));
    const Pieces toks = cut(n_tok, static_cast<uint64_t>(n) * sizeof(float), pool.parts());
    // A dispatch costs more than quantizing a row or two: few rows are quantized on the calling thread.
    pool.run(toks.count(), [&](uint32_t piece, unsigned) {
      const Range r = toks.range(piece);
      for (int64_t t = r.begin; t < r.end; ++t) s.act.quantize(t, row_ptr<const float>(x, t));
    }, small || static_cast<unsigned>(n_tok) < pool.parts());
    for (int t = 0; t < n_tok; ++t) views[t] = s.act.row(t);
    pool.run(out_rows.count(), [&](uint32_t piece, unsigned) {
      const Range r = out_rows.range(piece);
      kernel(wdata + static_cast<uint64_t>(r.begin) * w.nb[1], w.nb[1], r.end - r.begin, n, views, n_tok,
             out + r.begin, out_stride);
    }, small);
    return;
  }
  const FloatMatVec kernel = ctx.kernels().floating[w.type];
  auto* xs = s.index.as<const float*>(static_cast<size_t>(n_tok));
  for (int t = 0; t < n_tok; ++t) xs[t] = row_ptr<const float>(x, t);
  pool.run(out_rows.count(), [&](uint32_t piece, unsigned) {
    const Range r = out_rows.range(piece);
    kernel(wdata + static_cast<uint64_t>(r.begin) * w.nb[1], w.nb[1], r.end - r.begin, n, xs, n_tok,
           out + r.begin, out_stride);
  }, small);
}

}  // namespace strata::cpu
