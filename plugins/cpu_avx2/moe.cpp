#include "moe.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "pieces.hpp"
#include "simd.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/format/types.hpp"
#include "vec_math.hpp"

namespace strata::cpu {
namespace {

bool quantized(const KernelTable& k, uint32_t type) { return type < kMaxTypeId && k.quant[type] != nullptr; }

std::optional<std::string> check_type(const KernelTable& k, uint32_t type, uint32_t row_len, const char* what,
                                      uint32_t expert) {
  const auto tr = format::type_traits(type);
  const std::string where = std::string(what) + " of expert " + std::to_string(expert);
  if (!tr || type >= kMaxTypeId || (k.quant[type] == nullptr && k.floating[type] == nullptr)) {
    return where + " has type " + (tr ? std::string(tr->name) : std::to_string(type)) + ", which has no kernel";
  }
  if (row_len % tr->block_elems != 0 || (k.quant[type] != nullptr && row_len % 32 != 0)) {
    return where + ": rows of " + std::to_string(row_len) + " values are not whole " + std::string(tr->name) + " blocks";
  }
  return std::nullopt;
}

// The pieces of one matrix pass over the experts of a window: each expert with tokens gets runs of per[e] rows (a
// multiple of kRowAlign), sized by what a row costs there: its weight bytes, decoded once and read once per token.
// Experts without tokens get none.
struct ExpertPieces {
  const uint32_t* first = nullptr;  // n_experts + 1 entries: expert e's pieces are [first[e], first[e + 1])
  const int64_t* per = nullptr;     // rows a piece, per expert
  uint32_t n_experts = 0;
  int64_t rows = 0;                 // rows of each expert's matrix
  uint32_t count() const { return first[n_experts]; }

  // fn(expert, first row, end row) for one piece.
  template <class Fn>
  void visit(uint32_t piece, Fn fn) const {
    const uint32_t e = static_cast<uint32_t>(std::upper_bound(first, first + n_experts + 1, piece) - first) - 1;
    const int64_t r0 = static_cast<int64_t>(piece - first[e]) * per[e];
    fn(e, r0, std::min(rows, r0 + per[e]));
  }
};

// row_bytes(e): the weight bytes of one output row of expert e in this pass.
template <class RowBytes>
ExpertPieces cut_experts(const strata_moe_op& m, int64_t rows, unsigned parts, AlignedBuffer& buf, RowBytes row_bytes) {
  constexpr uint64_t kDecodeCost = 2;  // decoding a row weighs about two dot products with it
  auto* per = static_cast<int64_t*>(buf.reserve(m.n_experts * sizeof(int64_t) + (m.n_experts + 1) * sizeof(uint32_t)));
  auto* first = reinterpret_cast<uint32_t*>(per + m.n_experts);
  const auto cost = [&](uint32_t e) {
    const uint64_t np = m.token_offsets[e + 1] - m.token_offsets[e];
    return np == 0 ? 0 : row_bytes(e) * (kDecodeCost + np) / kDecodeCost;
  };
  uint64_t total = 0;
  for (uint32_t e = 0; e < m.n_experts; ++e) total += cost(e) * static_cast<uint64_t>(rows);
  const uint64_t target = std::min<uint64_t>(kPieceCost, total / (static_cast<uint64_t>(parts) * kPiecesPerPart));
  const int64_t whole = (rows + kRowAlign - 1) / kRowAlign * kRowAlign;
  first[0] = 0;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    const uint64_t c = cost(e);
    int64_t n = 0;
    per[e] = kRowAlign;
    if (c != 0) {
      per[e] = std::clamp<int64_t>(static_cast<int64_t>(target / c) / kRowAlign * kRowAlign, kRowAlign, whole);
      n = (rows + per[e] - 1) / per[e];
    }
    first[e + 1] = first[e] + static_cast<uint32_t>(n);
  }
  return {first, per, m.n_experts, rows};
}

// Every expert's pairs in token tiles (token_tiles.hpp), for the experts with enough of them: expert e's first
// tiled[e] pairs in tiles first[e]..first[e + 1). Empty when no expert has enough.
struct ExpertTiles {
  const TokenTile* tiles = nullptr;
  const uint32_t* first = nullptr;
  const int* tiled = nullptr;
};

// The tiles of pair rows q (one per pair, expert by expert as m lists them) of n values, laid out by the pool.
ExpertTiles make_expert_tiles(ThreadPool& pool, AlignedBuffer& buf, const strata_moe_op& m, const QuantRow* q, int64_t n,
                              bool small) {
  uint32_t total = 0;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    total += static_cast<uint32_t>(tile_count(tiled_tokens(static_cast<int>(m.token_offsets[e + 1] - m.token_offsets[e]))));
  }
  if (total == 0) return {};
  const size_t bytes = tile_bytes(n);
  auto* mem = static_cast<unsigned char*>(buf.reserve(total * (bytes + sizeof(TokenTile) + sizeof(uint32_t)) +
                                                      (m.n_experts + 1) * sizeof(uint32_t) + m.n_experts * sizeof(int)));
  auto* tiles = reinterpret_cast<TokenTile*>(mem + total * bytes);
  auto* owner = reinterpret_cast<uint32_t*>(tiles + total);
  auto* first = owner + total;
  auto* tiled = reinterpret_cast<int*>(first + m.n_experts + 1);
  first[0] = 0;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    tiled[e] = tiled_tokens(static_cast<int>(m.token_offsets[e + 1] - m.token_offsets[e]));
    first[e + 1] = first[e] + static_cast<uint32_t>(tile_count(tiled[e]));
    for (uint32_t i = first[e]; i < first[e + 1]; ++i) owner[i] = e;
  }
  pool.run(total, [&](uint32_t i, unsigned) {
    const uint32_t e = owner[i];
    const int from = static_cast<int>(i - first[e]) * kTileTokens;
    tiles[i] = make_tile(q + m.token_offsets[e] + from, std::min(kTileTokens, tiled[e] - from), n, mem + i * bytes);
  }, small || total < 2);
  return {tiles, first, tiled};
}

// One matrix's rows [row0, row1) for the pairs of one expert: quantized or float kernel as the type says.
struct MatrixInputs {
  const QuantRow* q;       // per pair (quantized matrices)
  const float* const* f;   // per pair (float matrices)
  const TokenTile* tiles;  // the first `tiled` pairs in tiles (quantized matrices with a tiles kernel)
  int tiled;
};

void run_rows(const KernelTable& k, uint32_t type, const void* matrix, int64_t row_len, int64_t row0, int64_t row1,
              const MatrixInputs& in, int n_pairs, float* out, int64_t out_stride) {
  const uint64_t stride = format::row_bytes(static_cast<format::GgmlType>(type), static_cast<uint64_t>(row_len));
  const auto* w = static_cast<const unsigned char*>(matrix) + static_cast<uint64_t>(row0) * stride;
  if (k.quant[type] != nullptr) {
    if (in.tiled > 0 && k.tiles[type] != nullptr) {
      run_tiled(k.tiles[type], k.quant[type], w, stride, row1 - row0, row_len, in.tiles, in.tiled, in.q, n_pairs,
                out + row0, out_stride);
    } else {
      k.quant[type](w, stride, row1 - row0, row_len, in.q, n_pairs, out + row0, out_stride);
    }
  } else {
    k.floating[type](w, stride, row1 - row0, row_len, in.f, n_pairs, out + row0, out_stride);
  }
}

STRATA_AVX2 void add_row(float* acc, const float* row, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(row + i)));
  for (; i < n; ++i) acc[i] = acc[i] + row[i];
}

}  // namespace

std::optional<std::string> check_moe_op(const Context& ctx, const strata_moe_op& m, bool need_rows) {
  const KernelTable& k = ctx.kernels();
  if (m.n_embd == 0 || m.n_ff == 0) return std::string("n_embd and n_ff must be positive");
  if (m.n_experts > 0 && (m.expert_ids == nullptr || m.weights == nullptr || m.token_offsets == nullptr)) {
    return std::string("expert_ids, weights and token_offsets must be set");
  }
  if (m.token_offsets != nullptr && m.token_offsets[0] != 0) return std::string("token_offsets[0] must be 0");
  if (auto why = format::check_expert_form(m.form)) return why;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    if (e > 0 && m.expert_ids[e] <= m.expert_ids[e - 1]) {
      return "expert_ids must be strictly ascending (entry " + std::to_string(e) + " is " +
             std::to_string(m.expert_ids[e]) + " after " + std::to_string(m.expert_ids[e - 1]) + ")";
    }
    if (m.token_offsets[e + 1] < m.token_offsets[e]) return "token_offsets decrease at entry " + std::to_string(e + 1);
    const strata_expert_weights& w = m.weights[e];
    if (w.gate == nullptr || w.up == nullptr || w.down == nullptr) {
      return "expert " + std::to_string(m.expert_ids[e]) + " has a missing matrix";
    }
    if (auto err = check_type(k, w.gate_type, m.n_embd, "gate", m.expert_ids[e])) return err;
    if (auto err = check_type(k, w.up_type, m.n_embd, "up", m.expert_ids[e])) return err;
    if (auto err = check_type(k, w.down_type, m.n_ff, "down", m.expert_ids[e])) return err;
  }
  const uint32_t pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  if (pairs > 0 && (m.token_index == nullptr || m.route_weight == nullptr || m.x == nullptr)) {
    return std::string("token_index, route_weight and x must be set");
  }
  for (uint32_t p = 0; p < pairs; ++p) {
    if (m.token_index[p] >= m.n_tok) {
      return "token_index[" + std::to_string(p) + "] = " + std::to_string(m.token_index[p]) + " is not below n_tok " +
             std::to_string(m.n_tok);
    }
  }
  if (need_rows && pairs > 0 && m.rows == nullptr) return std::string("rows must be set");
  return std::nullopt;
}

void compute_expert_rows(Context& ctx, const strata_moe_op& m, float* rows) {
  if (m.n_experts == 0 || m.token_offsets[m.n_experts] == 0) return;
  const KernelTable& k = ctx.kernels();
  ThreadPool& pool = ctx.pool();
  Scratch& s = ctx.scratch();
  const uint32_t n_pairs = m.token_offsets[m.n_experts];
  const int64_t n_embd = m.n_embd, n_ff = m.n_ff;

  const auto rb = [](uint32_t type, uint64_t n) { return format::row_bytes(static_cast<format::GgmlType>(type), n); };
  bool any_quant_in = false, any_quant_down = false;
  uint64_t bytes = 0;  // weight bytes read, times tokens
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    const strata_expert_weights& w = m.weights[e];
    any_quant_in = any_quant_in || quantized(k, w.gate_type) || quantized(k, w.up_type);
    any_quant_down = any_quant_down || quantized(k, w.down_type);
    bytes += (rb(w.gate_type, m.n_embd) * m.n_ff + rb(w.up_type, m.n_embd) * m.n_ff + rb(w.down_type, m.n_ff) * m.n_embd) *
             (m.token_offsets[e + 1] - m.token_offsets[e]);
  }
  const bool small = bytes < kSmallWorkBytes;

  // Per pair: its input row (quantized and float) and its hidden row (quantized and float).
  auto* tables = s.index.as<unsigned char>(static_cast<size_t>(n_pairs) * 2 * (sizeof(QuantRow) + sizeof(float*)));
  auto* x_q = reinterpret_cast<QuantRow*>(tables);
  auto* h_q = x_q + n_pairs;
  auto* x_f = reinterpret_cast<const float**>(h_q + n_pairs);
  auto* h_f = x_f + n_pairs;
  float* h = s.h.as<float>(static_cast<size_t>(n_pairs) * static_cast<size_t>(n_ff));
  float* u = s.u.as<float>(static_cast<size_t>(n_pairs) * static_cast<size_t>(n_ff));
  if (any_quant_in) s.act.resize(m.n_tok, n_embd);
  if (any_quant_down) s.hidden.resize(n_pairs, n_ff);
  for (uint32_t p = 0; p < n_pairs; ++p) {
    x_f[p] = m.x + static_cast<size_t>(m.token_index[p]) * m.n_embd;
    h_f[p] = h + static_cast<size_t>(p) * m.n_ff;
    if (any_quant_in) x_q[p] = s.act.row(m.token_index[p]);
    if (any_quant_down) h_q[p] = s.hidden.row(p);
  }

  // 1. Q8_1 of the window's input rows.
  if (any_quant_in) {
    const Pieces toks = cut(m.n_tok, static_cast<uint64_t>(n_embd) * sizeof(float), pool.parts());
    pool.run(toks.count(), [&](uint32_t piece, unsigned) {
      const Range r = toks.range(piece);
      for (int64_t t = r.begin; t < r.end; ++t) s.act.quantize(t, m.x + t * n_embd);
    }, small || m.n_tok < pool.parts());
  }
  // The form's biases are indexed by expert id: a bias row of expert entry e from row r0 on (NULL: none).
  const strata_expert_form* form = m.form;
  const bool plain = format::form_is_plain(form);
  const auto bias_at = [&](const float* bias, uint32_t e, int64_t len, int64_t r0) -> const float* {
    return bias != nullptr ? bias + static_cast<size_t>(m.expert_ids[e]) * static_cast<size_t>(len) + r0 : nullptr;
  };
  // Experts with many tokens (prefill) take their pairs in token tiles where their types have a tiles kernel.
  bool tiles_in = false, tiles_down = false;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    const strata_expert_weights& w = m.weights[e];
    tiles_in = tiles_in || (quantized(k, w.gate_type) && k.tiles[w.gate_type] != nullptr) ||
               (quantized(k, w.up_type) && k.tiles[w.up_type] != nullptr);
    tiles_down = tiles_down || (quantized(k, w.down_type) && k.tiles[w.down_type] != nullptr);
  }
  const ExpertTiles x_tiles = tiles_in ? make_expert_tiles(pool, s.tiles, m, x_q, n_embd, small) : ExpertTiles{};
  const auto tiles_of = [](const ExpertTiles& t, uint32_t e) -> std::pair<const TokenTile*, int> {
    return t.tiles != nullptr ? std::pair{t.tiles + t.first[e], t.tiled[e]} : std::pair<const TokenTile*, int>{nullptr, 0};
  };
  // 2. gate and up rows of every expert for its tokens, then (biases and) the activation on the same rows.
  const ExpertPieces in_pieces = cut_experts(m, n_ff, pool.parts(), s.pieces, [&](uint32_t e) {
    return rb(m.weights[e].gate_type, m.n_embd) + rb(m.weights[e].up_type, m.n_embd);
  });
  pool.run(in_pieces.count(), [&](uint32_t piece, unsigned) {
    in_pieces.visit(piece, [&](uint32_t e, int64_t r0, int64_t r1) {
      const strata_expert_weights& w = m.weights[e];
      const uint32_t p0 = m.token_offsets[e];
      const int np = static_cast<int>(m.token_offsets[e + 1] - p0);
      if (np == 0) return;
      const auto [tiles, tiled] = tiles_of(x_tiles, e);
      const MatrixInputs in{x_q + p0, x_f + p0, tiles, tiled};
      float* g_out = h + static_cast<size_t>(p0) * n_ff;
      float* u_out = u + static_cast<size_t>(p0) * n_ff;
      run_rows(k, w.gate_type, w.gate, n_embd, r0, r1, in, np, g_out, n_ff);
      run_rows(k, w.up_type, w.up, n_embd, r0, r1, in, np, u_out, n_ff);
      if (plain) {
        for (int t = 0; t < np; ++t) swiglu_row(g_out + t * n_ff + r0, u_out + t * n_ff + r0, g_out + t * n_ff + r0, r1 - r0);
        return;
      }
      const float* bg = bias_at(form->gate_bias, e, n_ff, r0);
      const float* bu = bias_at(form->up_bias, e, n_ff, r0);
      for (int t = 0; t < np; ++t) {
        float* g_row = g_out + t * n_ff + r0;
        expert_hidden_row(g_row, u_out + t * n_ff + r0, bg, bu, form->activation, form->alpha, form->limit, g_row, r1 - r0);
      }
    });
  }, small);
  // 3. Q8_1 of the hidden rows.
  if (any_quant_down) {
    const Pieces pairs = cut(n_pairs, static_cast<uint64_t>(n_ff) * sizeof(float), pool.parts());
    pool.run(pairs.count(), [&](uint32_t piece, unsigned) {
      const Range r = pairs.range(piece);
      for (int64_t p = r.begin; p < r.end; ++p) s.hidden.quantize(p, h + p * n_ff);
    }, small || n_pairs < pool.parts());  // a row each at most: waking the workers would cost more
  }
  // The x tiles are done with: the same buffer takes the hidden rows' tiles.
  const ExpertTiles h_tiles = tiles_down ? make_expert_tiles(pool, s.tiles, m, h_q, n_ff, small) : ExpertTiles{};
  // 4. down rows of every expert for its tokens, each output row (plus its bias) times its route weight.
  const ExpertPieces down_pieces =
      cut_experts(m, n_embd, pool.parts(), s.pieces, [&](uint32_t e) { return rb(m.weights[e].down_type, m.n_ff); });
  pool.run(down_pieces.count(), [&](uint32_t piece, unsigned) {
    down_pieces.visit(piece, [&](uint32_t e, int64_t r0, int64_t r1) {
      const strata_expert_weights& w = m.weights[e];
      const uint32_t p0 = m.token_offsets[e];
      const int np = static_cast<int>(m.token_offsets[e + 1] - p0);
      if (np == 0) return;
      const auto [tiles, tiled] = tiles_of(h_tiles, e);
      const MatrixInputs in{h_q + p0, h_f + p0, tiles, tiled};
      float* out = rows + static_cast<size_t>(p0) * n_embd;
      run_rows(k, w.down_type, w.down, n_ff, r0, r1, in, np, out, n_embd);
      const float* bd = form != nullptr ? bias_at(form->down_bias, e, n_embd, r0) : nullptr;
      for (int t = 0; t < np; ++t) bias_scale_row(out + t * n_embd + r0, bd, m.route_weight[p0 + t], r1 - r0);
    });
  }, small);
}

void sum_expert_rows(Context& ctx, const strata_moe_op& m, const float* rows, float* dst, int64_t dst_stride) {
  const uint32_t n_pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  // Each token's pairs in ascending expert id: pairs are listed expert by expert in ascending id, so a stable
  // bucketing by token keeps that order.
  Scratch& s = ctx.scratch();
  auto* start = s.index.as<uint32_t>(static_cast<size_t>(m.n_tok) + 1 + n_pairs);
  uint32_t* order = start + m.n_tok + 1;
  std::memset(start, 0, (static_cast<size_t>(m.n_tok) + 1) * sizeof(uint32_t));
  for (uint32_t p = 0; p < n_pairs; ++p) ++start[m.token_index[p] + 1];
  for (uint32_t t = 0; t < m.n_tok; ++t) start[t + 1] += start[t];
  {
    uint32_t* fill = s.work.as<uint32_t>(m.n_tok > 0 ? m.n_tok : 1);
    std::memcpy(fill, start, static_cast<size_t>(m.n_tok) * sizeof(uint32_t));
    for (uint32_t p = 0; p < n_pairs; ++p) order[fill[m.token_index[p]]++] = p;
  }
  // Adding rows is cheap next to waking the workers until the window holds many pairs.
  const bool small = static_cast<uint64_t>(n_pairs) * m.n_embd * sizeof(float) < 4 * kSmallWorkBytes;
  // A column costs a float of every pair's row, read, and of every token's sum, written.
  const Pieces pieces = cut(m.n_embd, (static_cast<uint64_t>(n_pairs) + m.n_tok) * sizeof(float), ctx.pool().parts(), kRowAlign);
  ctx.pool().run(pieces.count(), [&](uint32_t piece, unsigned) {
    const Range cols = pieces.range(piece);
    const int64_t n = cols.end - cols.begin;
    for (uint32_t t = 0; t < m.n_tok; ++t) {
      float* out = dst + t * dst_stride + cols.begin;
      if (start[t] == start[t + 1]) {
        std::memset(out, 0, static_cast<size_t>(n) * sizeof(float));
        continue;
      }
      std::memcpy(out, rows + static_cast<size_t>(order[start[t]]) * m.n_embd + cols.begin, static_cast<size_t>(n) * sizeof(float));
      for (uint32_t i = start[t] + 1; i < start[t + 1]; ++i) {
        add_row(out, rows + static_cast<size_t>(order[i]) * m.n_embd + cols.begin, n);
      }
    }
  }, small);
}

}  // namespace strata::cpu
