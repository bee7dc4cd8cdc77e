// What a device needs to compute some of a layer's experts for another card's window and hand back each pair's
// weighted row: mapped inputs (the window's normed rows, the router's ids and weights), mapped rows out, and per
// layer a table whose non-NULL entries name the experts to compute (MOE_ROUTED in rows-out mode, backend 1.4, skips
// the NULL ones). The peer card (peer_tier.hpp) and the peer link's service (link_service.hpp) each have one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/model.hpp"
#include "strata/op_tensor.hpp"

namespace strata {

class RowsOutBuffers {
 public:
  RowsOutBuffers(const Model& model, const experts::ExpertArena& arena, DeviceMemory& mem, uint32_t max_tokens)
      : arena_(arena), max_tokens_(std::max<uint32_t>(max_tokens, 1)) {
    const ModelWeights& w = model.weights();
    n_embd_ = model.hparams().n_embd;
    for (const LayerWeights& lw : w.layers) {
      if (lw.has_experts()) k_max_ = std::max(k_max_, lw.routing.k);
    }
    x_ = Buffer<float>::mapped(size_t{n_embd_} * max_tokens_, mem);
    ids_ = Buffer<int32_t>::mapped(size_t{k_max_} * max_tokens_, mem);
    weights_ = Buffer<float>::mapped(size_t{k_max_} * max_tokens_, mem);
    rows_ = Buffer<float>::mapped(size_t{n_embd_} * k_max_ * max_tokens_, mem);
    host_entries_.resize(w.layers.size());
    device_entries_.resize(w.layers.size());
    tables_.resize(w.layers.size());
    k_.resize(w.layers.size());
    for (uint32_t il = 0; il < w.layers.size(); ++il) {
      const LayerWeights& lw = w.layers[il];
      if (!lw.has_experts()) continue;
      const experts::ExpertLayout& layout = arena.layout(il);
      const uint32_t n = lw.routing.n_expert;
      host_entries_[il] = Buffer<strata_expert_weights>::mapped(n, mem);
      device_entries_[il] = Buffer<strata_expert_weights>(n, &mem);
      tables_[il] = strata_expert_table{n_embd_, lw.experts.n_ff, n, layout.gate_type, layout.up_type, layout.down_type,
                                        device_entries_[il].data(), nullptr};
      k_[il] = lw.routing.k;
    }
  }

  uint32_t max_tokens() const { return max_tokens_; }
  bool has_experts(uint32_t il) const { return il < tables_.size() && tables_[il].experts != nullptr; }
  uint32_t n_expert(uint32_t il) const { return tables_[il].n_expert; }

  // Copies a window's inputs in: x [n_embd, n_tok], ids and weights [k, n_tok] (k: layer il's).
  void load(uint32_t il, uint32_t n_tok, const float* x, const int32_t* ids, const float* weights) {
    std::memcpy(x_.data(), x, size_t{n_embd_} * n_tok * sizeof(float));
    std::memcpy(ids_.data(), ids, size_t{k_[il]} * n_tok * sizeof(int32_t));
    std::memcpy(weights_.data(), weights, size_t{k_[il]} * n_tok * sizeof(float));
  }
  // Layer il's entries in host memory, every one NULL with the layer's types: set those to compute.
  strata_expert_weights* clear_entries(uint32_t il) {
    const experts::ExpertLayout& layout = arena_.layout(il);
    strata_expert_weights* e = host_entries_[il].data();
    std::fill(e, e + tables_[il].n_expert,
              strata_expert_weights{nullptr, nullptr, nullptr, layout.gate_type, layout.up_type, layout.down_type, 0});
    return e;
  }
  // Enqueues the entries' copy to the device (before the op, on the compute stream).
  void enqueue_entries(DeviceQueues& queues, uint32_t il) const {
    queues.copy_async(device_entries_[il].data(), host_entries_[il].data(),
                      size_t{tables_[il].n_expert} * sizeof(strata_expert_weights), STRATA_COPY_HOST_TO_DEVICE, nullptr);
  }
  // MOE_ROUTED in rows-out mode over layer il's table for a window of n_tok tokens.
  strata_op op(uint32_t il, uint32_t n_tok) const {
    strata_op op = new_op(STRATA_OP_MOE_ROUTED);
    op.src[0] = tensor_f32(x_.data(), {n_embd_, n_tok});
    op.src[1] = tensor_i32(ids_.data(), {k_[il], n_tok});
    op.src[2] = tensor_f32(weights_.data(), {k_[il], n_tok});
    op.dst = tensor_f32(rows_.data(), {n_embd_, int64_t{k_[il]} * n_tok});
    op.extra = &tables_[il];
    op.i[2] = 1;  // rows out: each computed pair's row in its column, nothing summed
    return op;
  }
  // Whether `device` runs the op of every layer at 1 and at max_tokens tokens.
  template <class Supports>
  bool supported(const Supports& supports) const {
    for (uint32_t il = 0; il < tables_.size(); ++il) {
      if (has_experts(il) && (!supports(op(il, 1)) || !supports(op(il, max_tokens_)))) return false;
    }
    return true;
  }
  // [n_embd, k x max_tokens], mapped: column t x k + j holds token t's pair j when its expert was computed.
  const float* rows() const { return rows_.data(); }
  strata_tensor rows_tensor(uint32_t n_tok, uint32_t k) const {
    return tensor_f32(rows_.data(), {n_embd_, int64_t{k} * n_tok});
  }

 private:
  const experts::ExpertArena& arena_;
  uint32_t n_embd_ = 0, k_max_ = 0, max_tokens_ = 0;
  Buffer<float> x_, weights_, rows_;
  Buffer<int32_t> ids_;
  std::vector<Buffer<strata_expert_weights>> host_entries_, device_entries_;  // per layer
  std::vector<strata_expert_table> tables_;
  std::vector<uint32_t> k_;
};

}  // namespace strata
