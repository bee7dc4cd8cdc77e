// One MoE layer's window for MOE_ROUTED, made on the host, with its experts split into disjoint sets: what the
// rows-out composition tests compute once as one op and once as rows-out ops (backend 1.4, i[2] = 1) per set into
// a buffer R, then a summing op over the last set with src3 = R (moe_rows_out_test.cpp on the CPU backends,
// tests/gpu/gpu_moe_rows_out_test.cpp on a GPU). Header-only, so both test binaries build it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "strata/format/fp16.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_api.h"

namespace strata::test {

struct SplitWindowShape {
  format::GgmlType gate_up, down;
  int64_t n_embd, n_ff, n_expert, k, n_tok;
  int n_sets;  // rows-out ops: n_sets - 1; the last set is computed by the summing op

  std::string describe() const {
    return std::string(format::traits(gate_up).name) + "/" + std::string(format::traits(down).name) + " n_embd " +
           std::to_string(n_embd) + " n_ff " + std::to_string(n_ff) + " experts " + std::to_string(n_expert) +
           " k " + std::to_string(k) + " tokens " + std::to_string(n_tok) + " sets " + std::to_string(n_sets);
  }
};

struct SplitWindow {
  SplitWindowShape shape;
  std::vector<std::vector<unsigned char>> gate, up, down;  // [n_expert] each expert's matrices
  std::vector<float> x;                                    // [n_embd, n_tok] the normed rows
  std::vector<int32_t> ids;                                // [k, n_tok] k distinct experts per token
  std::vector<float> weights;                              // [k, n_tok]
  std::vector<int> set_of;                                 // [n_expert] each expert's set, 0 .. n_sets - 1

  int64_t n_pairs() const { return shape.k * shape.n_tok; }
  bool in_last_set(int32_t expert) const { return set_of[static_cast<size_t>(expert)] == shape.n_sets - 1; }
};

// rows x n weights: random blocks with sane f16 scales (random scale bits would make NaN and Inf), for the types
// the composition tests use.
inline std::vector<unsigned char> split_window_weights(format::GgmlType type, int64_t rows, int64_t n,
                                                       std::mt19937& rng) {
  const format::TypeTraits& tr = format::traits(type);
  std::vector<unsigned char> w(format::row_bytes(type, static_cast<uint64_t>(n)) * static_cast<uint64_t>(rows));
  for (size_t i = 0; i + 4 <= w.size(); i += 4) {
    const uint32_t r = rng();
    std::memcpy(&w[i], &r, 4);
  }
  std::vector<size_t> scale_at;  // byte offsets of the f16 scales in a block
  switch (type) {
    case format::GgmlType::Q8_0: scale_at = {0}; break;
    case format::GgmlType::Q4_K: case format::GgmlType::Q5_K: scale_at = {0, 2}; break;
    case format::GgmlType::Q6_K: scale_at = {208}; break;
    default: throw std::invalid_argument("split_window_weights: no scales known for " + std::string(tr.name));
  }
  std::uniform_real_distribution<float> scale(5e-4f, 1e-2f);
  for (size_t b = 0; b < w.size(); b += tr.block_bytes) {
    for (size_t at : scale_at) {
      const uint16_t h = format::fp32_to_fp16(scale(rng));
      std::memcpy(&w[b + at], &h, 2);
    }
  }
  return w;
}

inline SplitWindow make_split_window(const SplitWindowShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  SplitWindow w;
  w.shape = s;
  for (int64_t e = 0; e < s.n_expert; ++e) {
    w.gate.push_back(split_window_weights(s.gate_up, s.n_ff, s.n_embd, rng));
    w.up.push_back(split_window_weights(s.gate_up, s.n_ff, s.n_embd, rng));
    w.down.push_back(split_window_weights(s.down, s.n_embd, s.n_ff, rng));
  }
  std::normal_distribution<float> unit(0.0f, 1.0f);
  w.x.resize(static_cast<size_t>(s.n_embd * s.n_tok));
  for (float& v : w.x) v = unit(rng);
  std::uniform_real_distribution<float> route(0.05f, 1.0f);
  std::vector<int32_t> all(static_cast<size_t>(s.n_expert));
  for (size_t e = 0; e < all.size(); ++e) all[e] = static_cast<int32_t>(e);
  for (int64_t t = 0; t < s.n_tok; ++t) {
    // k distinct experts in random order: a partial Fisher-Yates shuffle.
    for (int64_t j = 0; j < s.k; ++j) {
      std::uniform_int_distribution<size_t> pick(static_cast<size_t>(j), all.size() - 1);
      std::swap(all[static_cast<size_t>(j)], all[pick(rng)]);
      w.ids.push_back(all[static_cast<size_t>(j)]);
      w.weights.push_back(route(rng));
    }
  }
  // Every set gets experts: expert e's set is e mod n_sets, then the sets are shuffled among the experts.
  w.set_of.resize(static_cast<size_t>(s.n_expert));
  for (size_t e = 0; e < w.set_of.size(); ++e) w.set_of[e] = static_cast<int>(e % static_cast<size_t>(s.n_sets));
  std::shuffle(w.set_of.begin(), w.set_of.end(), rng);
  return w;
}

// The window's rows negated: what a decoy op computes just before the summing op, so that rows a backend leaves
// in its scratch are not this window's.
inline std::vector<float> split_decoy_rows(const SplitWindow& w) {
  std::vector<float> x = w.x;
  for (float& v : x) v = -v;
  return x;
}

// Where expert e's matrices are for the op's device (host pointers, or copies in device memory).
struct ExpertAt {
  const void* gate;
  const void* up;
  const void* down;
};

// Table entries: expert e has its matrices when keep(e), else NULL (computed by another op).
inline std::vector<strata_expert_weights> split_window_entries(const SplitWindow& w, const std::vector<ExpertAt>& at,
                                                               const std::function<bool(int32_t)>& keep) {
  std::vector<strata_expert_weights> entries(at.size());
  for (size_t e = 0; e < at.size(); ++e) {
    strata_expert_weights& x = entries[e];
    x.gate_type = x.up_type = static_cast<uint32_t>(w.shape.gate_up);
    x.down_type = static_cast<uint32_t>(w.shape.down);
    if (keep(static_cast<int32_t>(e))) {
      x.gate = at[e].gate;
      x.up = at[e].up;
      x.down = at[e].down;
    }
  }
  return entries;
}

inline strata_expert_table split_window_table(const SplitWindow& w, const strata_expert_weights* entries) {
  const SplitWindowShape& s = w.shape;
  return {static_cast<uint32_t>(s.n_embd), static_cast<uint32_t>(s.n_ff), static_cast<uint32_t>(s.n_expert),
          static_cast<uint32_t>(s.gate_up), static_cast<uint32_t>(s.gate_up), static_cast<uint32_t>(s.down), entries, nullptr};
}

// The window's inputs where the op's device reads them.
struct SplitInputs {
  const float* x;
  const int32_t* ids;
  const float* weights;
};

// The summing MOE_ROUTED into dst [n_embd, n_tok]; with `pre` (dense [n_embd, k * n_tok]) as src3.
inline strata_op split_window_sum_op(const SplitWindow& w, const SplitInputs& in, const strata_expert_table* table,
                                     float* dst, const float* pre) {
  const SplitWindowShape& s = w.shape;
  strata_op op = new_op(STRATA_OP_MOE_ROUTED);
  op.src[0] = tensor_f32(in.x, {s.n_embd, s.n_tok});
  op.src[1] = tensor_i32(in.ids, {s.k, s.n_tok});
  op.src[2] = tensor_f32(in.weights, {s.k, s.n_tok});
  if (pre != nullptr) op.src[3] = tensor_f32(pre, {s.n_embd, s.k * s.n_tok});
  op.dst = tensor_f32(dst, {s.n_embd, s.n_tok});
  op.extra = table;
  return op;
}

// The rows-out MOE_ROUTED (i[2] = 1) into rows [n_embd, k * n_tok] (dense).
inline strata_op split_window_rows_op(const SplitWindow& w, const SplitInputs& in, const strata_expert_table* table,
                                      float* rows) {
  const SplitWindowShape& s = w.shape;
  strata_op op = split_window_sum_op(w, in, table, rows, nullptr);
  op.dst = tensor_f32(rows, {s.n_embd, s.k * s.n_tok});
  op.i[2] = 1;
  return op;
}

// A float bit pattern no op writes (a NaN with a payload): what output buffers hold before the ops.
constexpr uint32_t kSplitSentinel = 0x7fc0beef;

inline std::vector<float> split_sentinel_floats(size_t n) {
  std::vector<float> v(n);
  for (float& f : v) std::memcpy(&f, &kSplitSentinel, 4);
  return v;
}

inline bool is_split_sentinel(const float* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, p + i, 4);
    if (b != kSplitSentinel) return false;
  }
  return true;
}

inline std::string split_hex(const float* p) {
  uint32_t b;
  std::memcpy(&b, p, 4);
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", b);
  return s;
}

// "" when a and b (n floats, columns of row_len) have the same bytes, else where they first differ.
inline std::string split_first_difference(const float* a, const float* b, size_t n, int64_t row_len) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, 4) == 0) continue;
    return "column " + std::to_string(static_cast<int64_t>(i) / row_len) + " value " +
           std::to_string(static_cast<int64_t>(i) % row_len) + ": " + std::to_string(a[i]) + " (" + split_hex(a + i) +
           ") vs " + std::to_string(b[i]) + " (" + split_hex(b + i) + ")";
  }
  return "";
}

}  // namespace strata::test
