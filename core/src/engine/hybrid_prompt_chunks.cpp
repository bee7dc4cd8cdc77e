// The prompt path's chunks (experts.prompt_chunks, MOE_ROUTED's rows-out mode): a layer's PCIe experts cross the link
// in chunks through the two staging halves while the device computes the hits and then each chunk as it lands; the
// layer's own MOE_ROUTED computes the last chunk and sums every row in ascending expert id.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <span>

#include "strata/op_tensor.hpp"

namespace strata {

void HybridMoe::place_chunked(uint32_t il, uint32_t n_tok, const experts::LayerPlan& plan) {
  const experts::ExpertLayout& layout = arena_->layout(il);
  const uint32_t n_expert = tables_[il].n_expert;
  const strata_expert_weights none{nullptr, nullptr, nullptr, layout.gate_type, layout.up_type, layout.down_type, 0};
  const size_t n_miss = plan.pcie.size();
  const uint32_t half = staging_slots_ / 2;
  // Up to chunks_ chunks: each crosses the link while the device computes the one before (or the hits).
  const auto per_chunk = static_cast<uint32_t>(std::clamp<size_t>((n_miss + chunks_ - 1) / chunks_, 1, half));
  const auto n_chunks = static_cast<uint32_t>((n_miss + per_chunk - 1) / per_chunk);
  ++times_.chunked_layers;
  times_.chunks += n_chunks;
  uint32_t next_op = 0;
  // Enqueues MOE_ROUTED rows out on the experts `fill` enters in an otherwise empty table.
  const auto compute_rows = [&](const auto& fill) {
    strata_expert_weights* host = chunk_host_[next_op].data();
    std::fill(host, host + n_expert, none);
    fill(host);
    queues_.copy_async(chunk_device_[next_op].data(), host, size_t{n_expert} * sizeof(strata_expert_weights),
                       STRATA_COPY_HOST_TO_DEVICE, nullptr);
    chunk_tables_[next_op] = tables_[il];
    chunk_tables_[next_op].experts = chunk_device_[next_op].data();
    const strata_op op = rows_out_op(il, n_tok, &chunk_tables_[next_op]);
    queues_.compute_async(std::span<const strata_op>(&op, 1));
    ++next_op;
  };
  // The hits first: the device computes them while the first chunk crosses the link.
  if (!plan.hit.empty()) {
    compute_rows([&](strata_expert_weights* e) {
      for (const experts::PlannedExpert& h : plan.hit) e[h.expert] = layout.at(slot_address(h.slot));
    });
  }
  for (uint32_t c = 0; c < n_chunks; ++c) {
    const uint32_t b = c % 2;
    unsigned char* base = staging_.data() + uint64_t{b} * half * staging_bytes_;
    const size_t first = size_t{c} * per_chunk, last = std::min(n_miss, first + per_chunk);
    // This half's previous chunk must have been computed before its slots are overwritten.
    if (c >= 2) queues_.wait(copy_stream_->get(), chunk_computed_[b]->get());
    upload_targets_.clear();
    for (size_t i = first; i < last; ++i) upload_targets_.push_back({base + (i - first) * staging_bytes_, plan.pcie[i].expert});
    // Wide: a prompt window's misses all cross the link, so the pool's cores are free to fill the ring.
    upload_->copy_experts(upload_targets_, il, copy_stream_->get(), true);
    queues_.record(chunk_copied_[b]->get(), copy_stream_->get());
    queues_.wait(nullptr, chunk_copied_[b]->get());
    const auto fill = [&](strata_expert_weights* e) {
      for (size_t i = first; i < last; ++i) e[plan.pcie[i].expert] = layout.at(base + (i - first) * staging_bytes_);
    };
    if (c + 1 < n_chunks) {
      compute_rows(fill);
      queues_.record(chunk_computed_[b]->get(), nullptr);
    } else {
      // The last chunk is the layer's own MOE_ROUTED's: its table holds that chunk alone; every other row is in
      // chunk_rows_.
      strata_expert_weights* entries = host_entries_[il].data();
      std::fill(entries, entries + n_expert, none);
      fill(entries);
    }
  }
}

strata_op HybridMoe::rows_out_op(uint32_t il, uint32_t n_tok, const strata_expert_table* table) const {
  const uint32_t k = model_.weights().layers[il].routing.k;
  strata_op op = act_.moe_routed(n_embd_, k, n_tok, table);
  op.dst = tensor_f32(chunk_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  op.i[2] = 1;
  return op;
}

bool HybridMoe::chunks_supported(uint32_t n_tok) {
  if (chunk_rows_.size() == 0 || !supports_ || n_tok > max_tokens_) return false;
  for (uint32_t il : moe_layers_) {
    strata_op rows = rows_out_op(il, n_tok, &tables_[il]);
    strata_op sum = act_.moe_routed(n_embd_, model_.weights().layers[il].routing.k, n_tok, &tables_[il]);
    sum.src[3] = rows.dst;  // the layer's own MOE_ROUTED, taking the chunks' rows
    if (!supports_(rows) || !supports_(sum)) return false;
  }
  return true;
}

}  // namespace strata
