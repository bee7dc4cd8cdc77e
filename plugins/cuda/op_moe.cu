// MOE: the experts of one layer for one window, pairs planned on the host (strata_moe_op; reference
// core/src/reference/op_moe.cpp). The op's index arrays are host memory: the plan (items of up to eight pairs of
// one expert, each token's pairs in ascending expert id) is built here and copied to the device with one
// asynchronous copy. That copy is why MOE is never captured into a graph (graph_cache.cu); x, rows, dst and the
// expert matrices are device memory, and so are the biases of the op's form (backend 1.6, expert_form.cuh).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "expert_pairs.cuh"
#include "matvec.cuh"
#include "ops.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

Check check_matrix_type(uint32_t type, int64_t row_len, const char* which, uint32_t expert) {
  const std::string where = std::string(which) + " of expert " + std::to_string(expert);
  const int align = expert_weight_alignment(type);
  if (align == 0) return where + " has type " + format::type_name(type) + ", which has no GPU kernel";
  const auto tr = format::type_traits(type);
  if (row_len % tr->block_elems != 0) return where + " rows are not whole " + format::type_name(type) + " blocks";
  if (row_bytes(tr->type, static_cast<uint64_t>(row_len)) % static_cast<unsigned>(align) != 0) {
    return where + " rows are not a multiple of " + std::to_string(align) + " bytes";
  }
  return std::nullopt;
}

// Appends the bytes of v to `blob` at an offset aligned for T; returns that offset.
template <class T>
size_t append(std::vector<unsigned char>& blob, const std::vector<T>& v) {
  const size_t at = (blob.size() + alignof(T) - 1) / alignof(T) * alignof(T);
  blob.resize(at + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(blob.data() + at, v.data(), v.size() * sizeof(T));
  return at;
}

}  // namespace

Check check_moe(const strata_op& op) {
  if (op.extra == nullptr) return std::string("MOE needs a strata_moe_op in extra");
  const auto& m = *static_cast<const strata_moe_op*>(op.extra);
  if (auto e = format::check_matrix(op.dst, "dst", GgmlType::F32)) return e;
  if (op.dst.ne[0] != m.n_embd || op.dst.ne[1] != m.n_tok) return std::string("dst shape is not [n_embd, n_tok]");
  if ((reinterpret_cast<uintptr_t>(op.dst.data) | op.dst.nb[1]) % sizeof(float) != 0) {
    return std::string("dst rows are not float-aligned");
  }
  if (m.n_embd == 0 || m.n_ff == 0) return std::string("n_embd and n_ff must be positive");
  if (auto why = format::check_expert_form(m.form)) return why;
  if (m.n_experts == 0) return std::nullopt;
  if (m.expert_ids == nullptr || m.weights == nullptr || m.token_offsets == nullptr) {
    return std::string("expert_ids, weights and token_offsets must be set");
  }
  if (m.token_offsets[0] != 0) return std::string("token_offsets[0] must be 0");
  const strata_expert_weights& first = m.weights[0];
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    if (e > 0 && m.expert_ids[e] <= m.expert_ids[e - 1]) {
      return "expert_ids must be strictly ascending (entry " + std::to_string(e) + ")";
    }
    if (m.token_offsets[e + 1] < m.token_offsets[e]) return "token_offsets decrease at entry " + std::to_string(e + 1);
    const strata_expert_weights& w = m.weights[e];
    if (w.gate == nullptr || w.up == nullptr || w.down == nullptr) {
      return "expert " + std::to_string(m.expert_ids[e]) + " has a missing matrix";
    }
    if (w.gate_type != first.gate_type || w.up_type != first.up_type || w.down_type != first.down_type) {
      return "expert " + std::to_string(m.expert_ids[e]) +
             "'s matrix types differ from the first expert's (the GPU kernels take one set of types per op)";
    }
    const uint32_t id = m.expert_ids[e];
    if (auto err = check_matrix_type(w.gate_type, m.n_embd, "gate", id)) return err;
    if (auto err = check_matrix_type(w.up_type, m.n_embd, "up", id)) return err;
    if (auto err = check_matrix_type(w.down_type, m.n_ff, "down", id)) return err;
  }
  const uint32_t pairs = m.token_offsets[m.n_experts];
  if (pairs > 0 && (m.token_index == nullptr || m.route_weight == nullptr || m.x == nullptr)) {
    return std::string("token_index, route_weight and x must be set");
  }
  for (uint32_t p = 0; p < pairs; ++p) {
    if (m.token_index[p] >= m.n_tok) {
      return "token_index[" + std::to_string(p) + "] = " + std::to_string(m.token_index[p]) + " is not below n_tok";
    }
  }
  if (pairs > 65535) return std::string("more than 65535 (token, expert) pairs in one MOE");
  return std::nullopt;
}

void run_moe(Context& ctx, const strata_op& op) {
  const auto& m = *static_cast<const strata_moe_op*>(op.extra);
  const uint32_t n_pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  auto* dst = static_cast<float*>(op.dst.data);
  const int64_t dst_stride = static_cast<int64_t>(op.dst.nb[1] / sizeof(float));
  if (n_pairs == 0) {
    for (uint32_t t = 0; t < m.n_tok; ++t) {
      check_cuda(cudaMemsetAsync(dst + t * dst_stride, 0, m.n_embd * sizeof(float), ctx.stream()), "MOE (no pairs)");
    }
    return;
  }

  // Items: each expert's pairs in groups of pairs_per_item.
  uint32_t most = 0;
  for (uint32_t e = 0; e < m.n_experts; ++e) most = std::max(most, m.token_offsets[e + 1] - m.token_offsets[e]);
  const int per_item = tokens_per_pass(most);
  std::vector<PairItem> items;
  for (uint32_t e = 0; e < m.n_experts; ++e) {
    const strata_expert_weights& w = m.weights[e];
    for (uint32_t p = m.token_offsets[e]; p < m.token_offsets[e + 1]; ++p) {
      if ((p - m.token_offsets[e]) % per_item == 0) {
        PairItem it{};
        it.mat[0] = static_cast<const uint8_t*>(w.gate);
        it.mat[1] = static_cast<const uint8_t*>(w.up);
        it.mat[2] = static_cast<const uint8_t*>(w.down);
        it.expert = m.expert_ids[e];
        items.push_back(it);
      }
      PairItem& it = items.back();
      it.token[it.n] = m.token_index[p];
      it.pair[it.n] = p;
      ++it.n;
    }
  }
  // Each token's pairs, in the order of the expert list (ascending id).
  std::vector<uint32_t> tok_count(m.n_tok, 0), tok_begin(m.n_tok, 0), tok_pairs(n_pairs);
  for (uint32_t p = 0; p < n_pairs; ++p) ++tok_count[m.token_index[p]];
  for (uint32_t t = 1; t < m.n_tok; ++t) tok_begin[t] = tok_begin[t - 1] + tok_count[t - 1];
  std::vector<uint32_t> fill(tok_begin);
  for (uint32_t p = 0; p < n_pairs; ++p) tok_pairs[fill[m.token_index[p]]++] = p;
  const std::vector<float> weights(m.route_weight, m.route_weight + n_pairs);
  const std::vector<uint32_t> n_items{static_cast<uint32_t>(items.size())};

  std::vector<unsigned char> blob;
  const size_t at_items = append(blob, items);
  const size_t at_n_items = append(blob, n_items);
  const size_t at_weights = append(blob, weights);
  const size_t at_begin = append(blob, tok_begin);
  const size_t at_count = append(blob, tok_count);
  const size_t at_pairs = append(blob, tok_pairs);
  auto* index = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::MoeIndex, blob.size()));
  float* rows = m.rows != nullptr
                    ? m.rows
                    : static_cast<float*>(ctx.scratch(ScratchSlot::MoeRows, static_cast<uint64_t>(n_pairs) * m.n_embd * sizeof(float)));
  check_cuda(cudaMemcpyAsync(index, blob.data(), blob.size(), cudaMemcpyHostToDevice, ctx.stream()), "MOE (plan copy)");

  ExpertPlan plan{};
  plan.gate_type = m.weights[0].gate_type;
  plan.up_type = m.weights[0].up_type;
  plan.down_type = m.weights[0].down_type;
  plan.n_embd = m.n_embd;
  plan.n_ff = m.n_ff;
  plan.n_tok = m.n_tok;
  plan.n_pairs = n_pairs;
  plan.pairs_per_item = per_item;
  plan.items = reinterpret_cast<const PairItem*>(index + at_items);
  plan.n_items = reinterpret_cast<const uint32_t*>(index + at_n_items);
  plan.max_items = static_cast<unsigned>(items.size());
  plan.pair_weight = reinterpret_cast<const float*>(index + at_weights);
  plan.tok_begin = reinterpret_cast<const uint32_t*>(index + at_begin);
  plan.tok_count = reinterpret_cast<const uint32_t*>(index + at_count);
  plan.tok_pairs = reinterpret_cast<const uint32_t*>(index + at_pairs);
  plan.x = m.x;
  plan.x_stride = m.n_embd;
  plan.rows = rows;
  plan.rows_stride = m.n_embd;
  plan.pre = nullptr;  // MOE computes every listed pair
  plan.pre_stride = 0;
  plan.dst = dst;
  plan.dst_stride = dst_stride;
  plan.form = expert_form_of(m.form);
  run_expert_plan(ctx, plan);
}

}  // namespace strata::gpu
