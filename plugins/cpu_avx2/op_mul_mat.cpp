// MUL_MAT: dst [n_out, n_tok] = weight [n_in, n_out] x src1 [n_in, n_tok]. Quantized weights read the activation
// rows quantized once to Q8_1; float weights read them as floats. The pool's pieces are runs of output rows.
// Backend 1.6: a stack of B matrices (src0 ne[2] = B, nb[2] apart) multiplies src1 [n_in, B, n_tok] matrix by
// matrix into dst [n_out, B, n_tok]: B plain products over views (src1 and dst may be strided views: their
// columns nb[1] apart, tokens nb[2] apart), cut into pieces of (matrix, output rows) in one pool run.
#include <algorithm>
#include <vector>

#include "ops.hpp"
#include "pieces.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

namespace {
// Where the B products read and write, in bytes: matrix b's weight at w + b * w_step, its column of token t at
// x + b * x_mat + t * x_tok, its output at dst + b * d_mat + t * d_tok. A plain MUL_MAT is a stack of one.
struct Stack {
  int64_t count = 1;
  uint64_t w_step = 0, x_mat = 0, x_tok = 0, d_mat = 0, d_tok = 0;
  int64_t n_tok = 0;
};

Stack stack_of(const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  Stack s;
  s.count = w.ne[2];
  if (s.count == 1) {
    s.x_tok = x.nb[1];
    s.d_tok = d.nb[1];
    s.n_tok = x.ne[1];
  } else {
    s.w_step = w.nb[2];
    s.x_mat = x.nb[1];
    s.x_tok = x.nb[2];
    s.d_mat = d.nb[1];
    s.d_tok = d.nb[2];
    s.n_tok = x.ne[2];
  }
  return s;
}

// One matrix (or one plane of src1 or dst) of a 3-D operand as the 2-D descriptor the matrix checks read.
strata_tensor plane(const strata_tensor& t) {
  strata_tensor p = t;
  p.ne[2] = 1;
  return p;
}

// A stack's src1 or dst: f32 [ne0, B, n_tok] with float-aligned strides (the columns are read or written as floats).
Check check_stacked(const strata_tensor& t, const char* what, int64_t ne0, int64_t stack) {
  if (auto e = check_matrix(plane(t), what, format::GgmlType::F32)) return e;
  if (t.ne[0] != ne0 || t.ne[1] != stack || t.ne[3] != 1) {
    return std::string(what) + " must be [" + std::to_string(ne0) + ", " + std::to_string(stack) + ", n_tok]";
  }
  if (t.nb[1] % sizeof(float) != 0 || t.nb[2] % sizeof(float) != 0) return std::string(what) + " strides are not float-aligned";
  return std::nullopt;
}

}  // namespace

Check check_mul_mat(const Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  if (w.ne[3] != 1) return std::string("src0 (weight) has more than three dimensions");
  const int64_t stack = w.ne[2];
  if (stack < 1) return "src0 (weight) has ne[2] = " + std::to_string(stack);
  if (auto e = check_matrix(plane(w), "src0 (weight)")) return e;
  const KernelTable& k = ctx.kernels();
  const bool quant = w.type < kMaxTypeId && k.quant[w.type] != nullptr;
  const bool floating = w.type < kMaxTypeId && k.floating[w.type] != nullptr;
  if (!quant && !floating) return "no kernel for weight type " + type_name(w.type);
  if (quant && w.ne[0] % 32 != 0) return "quantized rows must be a multiple of 32 values";
  if (stack > 1) {
    if (auto e = check_stacked(x, "src1", w.ne[0], stack)) return e;
    if (auto e = check_stacked(d, "dst", w.ne[1], stack)) return e;
    if (x.ne[2] < 1 || d.ne[2] != x.ne[2]) return std::string("dst and src1 have different token counts");
    return std::nullopt;
  }
  if (auto e = check_matrix(x, "src1", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(d, "dst", format::GgmlType::F32)) return e;
  if (x.ne[0] != w.ne[0]) return "src1 rows have " + std::to_string(x.ne[0]) + " values, weight rows " + std::to_string(w.ne[0]);
  if (d.ne[0] != w.ne[1] || d.ne[1] != x.ne[1]) return "dst shape is not [weight rows, src1 rows]";
  if (d.nb[1] % sizeof(float) != 0) return "dst rows are not float-aligned";
  return std::nullopt;
}

void run_mul_mat(Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const Stack st = stack_of(op);
  const int64_t n = w.ne[0], rows = w.ne[1], mats = st.count;
  const int n_tok = static_cast<int>(st.n_tok);
  const int64_t columns = mats * n_tok;  // activation columns, matrix-major: b * n_tok + t
  const auto* wdata = static_cast<const unsigned char*>(w.data);
  const auto* xdata = static_cast<const unsigned char*>(x.data);
  auto* ddata = static_cast<unsigned char*>(d.data);
  const int64_t out_stride = static_cast<int64_t>(st.d_tok / sizeof(float));
  const auto column = [&](int64_t c) {
    return reinterpret_cast<const float*>(xdata + static_cast<uint64_t>(c / n_tok) * st.x_mat +
                                          static_cast<uint64_t>(c % n_tok) * st.x_tok);
  };
  ThreadPool& pool = ctx.pool();
  Scratch& s = ctx.scratch();
  const uint64_t row_cost = w.nb[1] * static_cast<uint64_t>(n_tok);
  const bool small = row_cost * static_cast<uint64_t>(rows * mats) < kSmallWorkBytes;
  // Pieces sized by the whole stack's work, each within one matrix: (matrix, run of output rows).
  Pieces out_rows = cut(rows * mats, row_cost, pool.parts(), kRowAlign);
  out_rows.n = rows;
  const uint32_t per_matrix = out_rows.count();
  const auto product = [&](uint32_t piece, auto&& kernel_call) {
    const int64_t b = piece / per_matrix;
    const Range r = out_rows.range(piece % per_matrix);
    const unsigned char* wrows = wdata + static_cast<uint64_t>(b) * st.w_step + static_cast<uint64_t>(r.begin) * w.nb[1];
    auto* out = reinterpret_cast<float*>(ddata + static_cast<uint64_t>(b) * st.d_mat) + r.begin;
    kernel_call(b, wrows, r.end - r.begin, out);
  };

  if (const QuantMatVec kernel = ctx.kernels().quant[w.type]) {
    s.act.resize(columns, n);
    auto* views = s.index.as<QuantRow>(static_cast<size_t>(columns));
    const Pieces cols = cut(columns, static_cast<uint64_t>(n) * sizeof(float), pool.parts());
    // A dispatch costs more than quantizing a row or two: few rows are quantized on the calling thread.
    pool.run(cols.count(), [&](uint32_t piece, unsigned) {
      const Range r = cols.range(piece);
      for (int64_t c = r.begin; c < r.end; ++c) s.act.quantize(c, column(c));
    }, small || static_cast<unsigned>(columns) < pool.parts());
    for (int64_t c = 0; c < columns; ++c) views[c] = s.act.row(c);
    const QuantTiles tiles_kernel = ctx.kernels().tiles[w.type];
    const int tiled = tiles_kernel != nullptr ? tiled_tokens(n_tok) : 0;
    if (tiled > 0) {
      // Many tokens: each matrix's first `tiled` columns in tiles of 16, laid out once here and read by every
      // piece; the rest (fewer than 12) by the one-token driver in the same piece.
      const int per = tile_count(tiled);
      const size_t bytes = tile_bytes(n);
      const size_t count = static_cast<size_t>(per) * static_cast<size_t>(mats);
      auto* mem = static_cast<unsigned char*>(s.tiles.reserve(count * (bytes + sizeof(TokenTile))));
      auto* tiles = reinterpret_cast<TokenTile*>(mem + count * bytes);
      pool.run(static_cast<uint32_t>(count), [&](uint32_t i, unsigned) {
        const int64_t b = i / per, first = static_cast<int64_t>(i % per) * kTileTokens;
        tiles[i] = make_tile(views + b * n_tok + first, static_cast<int>(std::min<int64_t>(kTileTokens, tiled - first)),
                             n, mem + i * bytes);
      }, small || count < 2);
      pool.run(per_matrix * static_cast<uint32_t>(mats), [&](uint32_t piece, unsigned) {
        product(piece, [&](int64_t b, const unsigned char* wrows, int64_t rows_here, float* out) {
          run_tiled(tiles_kernel, kernel, wrows, w.nb[1], rows_here, n, tiles + b * per, tiled, views + b * n_tok,
                    n_tok, out, out_stride);
        });
      }, small);
      return;
    }
    pool.run(per_matrix * static_cast<uint32_t>(mats), [&](uint32_t piece, unsigned) {
      product(piece, [&](int64_t b, const unsigned char* wrows, int64_t count, float* out) {
        kernel(wrows, w.nb[1], count, n, views + b * n_tok, n_tok, out, out_stride);
      });
    }, small);
    return;
  }
  const FloatMatVec kernel = ctx.kernels().floating[w.type];
  auto* xs = s.index.as<const float*>(static_cast<size_t>(columns));
  for (int64_t c = 0; c < columns; ++c) xs[c] = column(c);
  pool.run(per_matrix * static_cast<uint32_t>(mats), [&](uint32_t piece, unsigned) {
    product(piece, [&](int64_t b, const unsigned char* wrows, int64_t count, float* out) {
      kernel(wrows, w.nb[1], count, n, xs + b * n_tok, n_tok, out, out_stride);
    });
  }, small);
}

}  // namespace strata::cpu
