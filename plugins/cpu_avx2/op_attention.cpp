// ATTENTION: causal grouped-query attention of q (src0 [head_dim, n_head, n_tok]) over the k and v caches
// (src1, src2: f16, q8_0 or f32 [head_dim * n_kv_head, n_ctx]); token t sees cache columns 0..pos_t (src3). Per
// (token, head), in double and rounded to float once (docs/CANONICAL_ARITHMETIC.md section 6, as the
// reference): s_j = scale * (q . k_j) in the 32-lane order, e_j = exp(s_j - max s), out = (sum_j e_j v_j) /
// (sum_j e_j) with both sums over ascending j. Heads share kv heads in groups of n_head / n_kv_head. Workers
// split (token, run of heads of one group) items; a run decodes each cache column once for all its heads.
// Backend 1.6 (gpt-oss): i[2] = W > 0 limits token t to columns pos_t - W < j <= pos_t; src4 f32 [n_head] sinks:
// the max takes sink_h too, and exp(sink_h - max) joins the denominator after the columns (no value row). Value
// heads may have their own size dv = src2.ne[0] / n_kv_head (deepseek2's latent attention: src2 a view of src1's
// first columns, rows the keys' stride apart); head h then fills dst[h * dv, (h + 1) * dv).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "ops.hpp"
#include "pieces.hpp"
#include "row_math.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {
namespace {

// head_dim floats of one kv head in cache column j (head_dim: the key or the value head size).
void load_head(const strata_tensor& cache, int64_t j, int64_t kv_head, int64_t head_dim, float* out) {
  const unsigned char* col = row_ptr<const unsigned char>(cache, j);
  if (is_type(cache, format::GgmlType::F16)) {
    f16_to_f32_row(reinterpret_cast<const uint16_t*>(col) + kv_head * head_dim, out, head_dim);
    return;
  }
  if (is_type(cache, format::GgmlType::F32)) {
    std::memcpy(out, col + kv_head * head_dim * static_cast<int64_t>(sizeof(float)),
                static_cast<size_t>(head_dim) * sizeof(float));
    return;
  }
  const int64_t first = kv_head * head_dim / 32;
  for (int64_t b = 0; b < head_dim / 32; ++b) {
    format::block_q8_0 blk;
    std::memcpy(&blk, col + (first + b) * static_cast<int64_t>(sizeof blk), sizeof blk);
    const float d = format::fp16_to_fp32(blk.d);
    for (int i = 0; i < 32; ++i) out[32 * b + i] = static_cast<float>(blk.qs[i]) * d;
  }
}

// The first cache column a token at position `pos` sees: 0, or pos - W + 1 under a sliding window W.
int64_t first_column(int32_t pos, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, static_cast<int64_t>(pos) - window + 1) : 0;
}

// The sinks tensor (src4) when the op's struct_size covers it and it has data, else NULL.
const strata_tensor* attention_sinks(const strata_op& op) {
  const bool covered = op.struct_size >= offsetof(strata_op, src4) + sizeof(strata_tensor);
  return covered && op.src4.data != nullptr ? &op.src4 : nullptr;
}

// Turns one head's scores s[0, len) into exp(s_j - max) in place, and returns their sum in ascending j, plus
// exp(sink - max) after them when the head has a sink (the max then takes the sink too).
double exponentiate(double* s, int64_t len, const float* sink) {
  double mx = *std::max_element(s, s + len);
  if (sink != nullptr) mx = std::max(mx, static_cast<double>(*sink));
  double sum = 0.0;
  for (int64_t j = 0; j < len; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum = sum + s[j];
  }
  if (sink != nullptr) sum = sum + std::exp(static_cast<double>(*sink) - mx);
  return sum;
}

// One head that shares its kv head with no other in its item (a vision encoder's: n_kv_head = n_head): it reads
// each column once, so it widens the floats in registers (dot32_d, axpy_d) rather than through a stored double row.
// The same sums as a run's. Kept out of line: folded into the runs' loop it slowed them by a fifth.
struct LoneHead {
  const strata_tensor* k;
  const strata_tensor* v;
  int64_t kv_head, head_dim, value_dim, first, len;
  double scale;
};
__attribute__((noinline)) void lone_head(const LoneHead& h, const float* qh, const float* sink, double* scores,
                                         double* acc, float* row, float* out) {
  for (int64_t j = 0; j < h.len; ++j) {
    load_head(*h.k, h.first + j, h.kv_head, h.head_dim, row);
    scores[j] = h.scale * dot32_d(qh, row, h.head_dim);
  }
  const double total = exponentiate(scores, h.len, sink);
  std::fill(acc, acc + h.value_dim, 0.0);
  for (int64_t j = 0; j < h.len; ++j) {
    load_head(*h.v, h.first + j, h.kv_head, h.value_dim, row);
    axpy_d(scores[j], row, acc, h.value_dim);
  }
  div_to_float(acc, total, out, h.value_dim);
}

}  // namespace

Check check_attention(const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  if (auto e = check_rows(q, "src0 (q)", format::GgmlType::F32)) return e;
  if (auto e = check_rows(pos, "src3 (positions)", format::GgmlType::I32)) return e;
  if (auto e = check_matrix(d, "dst", format::GgmlType::F32)) return e;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1];
  if (n_head <= 0 || n_kv_head <= 0 || n_head % n_kv_head != 0) {
    return "n_head " + std::to_string(n_head) + " must be a positive multiple of n_kv_head " + std::to_string(n_kv_head);
  }
  if (op.i[2] < 0) return "i[2] (sliding window) must be 0 (none) or positive, not " + std::to_string(op.i[2]);
  if (const strata_tensor* s = attention_sinks(op)) {
    if (auto e = check_rows(*s, "src4 (sinks)", format::GgmlType::F32)) return e;
    if (s->ne[0] != n_head || row_count(*s) != 1) {
      return "src4 (sinks) must be one f32 row of n_head = " + std::to_string(n_head) + " values";
    }
  }
  if (q.ne[1] != n_head || q.ne[3] != 1) return std::string("q must be [head_dim, n_head, n_tok]");
  if (v.ne[0] < 1 || v.ne[0] % n_kv_head != 0) return std::string("src2 (v cache) columns are not dv * n_kv_head long");
  const int64_t value_dim = v.ne[0] / n_kv_head;
  for (const strata_tensor* c : {&k, &v}) {
    const bool keys = c == &k;
    const char* what = keys ? "src1 (k cache)" : "src2 (v cache)";
    const int64_t dim = keys ? head_dim : value_dim;
    if (!is_type(*c, format::GgmlType::F16) && !is_type(*c, format::GgmlType::Q8_0) &&
        !is_type(*c, format::GgmlType::F32)) {
      return std::string(what) + " type " + type_name(c->type) + " (known: f16, q8_0, f32)";
    }
    if (auto e = check_matrix(*c, what)) return e;
    if (keys && c->ne[0] != head_dim * n_kv_head) return std::string(what) + " columns are not head_dim * n_kv_head long";
    if (is_type(*c, format::GgmlType::Q8_0) && dim % 32 != 0) {
      return std::string("a q8_0 cache needs its head size (") + what + ") to be a multiple of 32";
    }
  }
  if (k.ne[1] != v.ne[1]) return std::string("k and v caches have different lengths");
  if (row_count(pos) != 1 || pos.ne[0] != q.ne[2]) return std::string("src3 must hold one position per token");
  if (d.ne[0] != value_dim * n_head || d.ne[1] != q.ne[2]) return std::string("dst must be [dv * n_head, n_tok]");
  return std::nullopt;
}

void run_attention(Context& ctx, const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1], group = n_head / n_kv_head;
  const int64_t n_tok = q.ne[2];
  const int64_t value_dim = v.ne[0] / n_kv_head, widest = std::max(head_dim, value_dim);
  const int64_t n_ctx = k.ne[1];
  const double scale = static_cast<double>(op.f[0]);
  const int64_t window = op.i[2];
  const strata_tensor* sink_tensor = attention_sinks(op);
  const auto* sinks = sink_tensor != nullptr ? static_cast<const float*>(sink_tensor->data) : nullptr;
  const auto* p = static_cast<const int32_t*>(pos.data);
  for (int64_t t = 0; t < n_tok; ++t) {
    if (p[t] < 0 || p[t] >= n_ctx) {
      throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "ATTENTION: position " + std::to_string(p[t]) + " of token " +
                                                      std::to_string(t) + " is outside the cache's " +
                                                      std::to_string(n_ctx) + " columns");
    }
  }
  // The most columns one token reads: the scores' room per head.
  int64_t longest = 1;
  for (int64_t t = 0; t < n_tok; ++t) longest = std::max(longest, p[t] + int64_t{1} - first_column(p[t], window));
  const unsigned parts = ctx.pool().parts();
  // An item is a token and a run of `run` heads that share one kv head: each cache column is decoded once for the
  // run (deepseek2's 128 heads share one latent column). Runs are as long as the workers allow: at least two
  // items per worker when there are enough heads, and no run's scores over 4 MiB.
  const int64_t base = n_tok * n_kv_head;
  const int64_t by_memory = std::max<int64_t>(1, (int64_t{1} << 19) / longest);
  const int64_t splits = std::clamp<int64_t>(
      std::max((2 * static_cast<int64_t>(parts) + base - 1) / base, (group + by_memory - 1) / by_memory), 1, group);
  const int64_t run = (group + splits - 1) / splits, runs_per_kv = (group + run - 1) / run;
  // Per participant: the run's scores, outputs and denominators in double; its q rows and one key or value head
  // widened to double once (the dots' 32 lanes padded with zeros); one decoded head in float.
  const int64_t padded = (head_dim + 31) / 32 * 32, wide = std::max(padded, value_dim);
  const int64_t per_part = run * (longest + value_dim + 1 + padded) + wide + (widest + 1) / 2 + 8;
  double* work = ctx.scratch().work.as<double>(static_cast<size_t>(per_part) * parts);
  const auto body = [&](unsigned slot, int64_t begin, int64_t end) {
    double* scores = work + per_part * slot;  // [run][longest]
    double* acc = scores + run * longest;      // [run][value_dim]
    double* total = acc + run * value_dim;     // [run]
    double* qd = total + run;                  // [run][padded]
    double* kv = qd + run * padded;            // [wide]: the column's key or value head in double
    auto* row = reinterpret_cast<float*>(kv + wide);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / (n_kv_head * runs_per_kv), rest = item % (n_kv_head * runs_per_kv);
      const int64_t kvh = rest / runs_per_kv, h0 = kvh * group + rest % runs_per_kv * run;
      const int64_t heads = std::min(run, (kvh + 1) * group - h0);
      const int64_t first = first_column(p[t], window);
      const int64_t len = static_cast<int64_t>(p[t]) + 1 - first;
      if (heads == 1) {
        lone_head({&k, &v, kvh, head_dim, value_dim, first, len, scale}, row_ptr<const float>(q, t * n_head + h0),
                  sinks != nullptr ? sinks + h0 : nullptr, scores, acc, row, row_ptr<float>(d, t) + h0 * value_dim);
        continue;
      }
      for (int64_t r = 0; r < heads; ++r) {
        widen_row(row_ptr<const float>(q, t * n_head + h0 + r), qd + r * padded, head_dim, padded);
      }
      for (int64_t j = 0; j < len; ++j) {
        load_head(k, first + j, kvh, head_dim, row);
        widen_row(row, kv, head_dim, padded);
        for (int64_t r = 0; r < heads; ++r) scores[r * longest + j] = scale * dot32_dd(qd + r * padded, kv, padded);
      }
      // Per head, as one head alone computes it: the max, then exp and the denominator in ascending j.
      for (int64_t r = 0; r < heads; ++r) {
        total[r] = exponentiate(scores + r * longest, len, sinks != nullptr ? sinks + h0 + r : nullptr);
      }
      std::fill(acc, acc + heads * value_dim, 0.0);
      for (int64_t j = 0; j < len; ++j) {
        load_head(v, first + j, kvh, value_dim, row);
        widen_row(row, kv, value_dim, value_dim);
        for (int64_t r = 0; r < heads; ++r) axpy_dd(scores[r * longest + j], kv, acc + r * value_dim, value_dim);
      }
      for (int64_t r = 0; r < heads; ++r) {
        div_to_float(acc + r * value_dim, total[r], row_ptr<float>(d, t) + (h0 + r) * value_dim, value_dim);
      }
    }
  };
  const int64_t items = base * runs_per_kv;
  if (parts == 1 || items == 1) {
    body(0, 0, items);
    return;
  }
  // An item reads a run of cache columns: its cost, roughly, the k and v bytes of the longest one, per head.
  const uint64_t item_cost =
      static_cast<uint64_t>(longest) * static_cast<uint64_t>(head_dim + value_dim) * sizeof(float) * static_cast<uint64_t>(run);
  const Pieces pieces = cut(items, item_cost, parts);
  ctx.pool().run(pieces.count(), [&](uint32_t piece, unsigned slot) {
    const Range r = pieces.range(piece);
    body(slot, r.begin, r.end);
  });
}

}  // namespace strata::cpu
