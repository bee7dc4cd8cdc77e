// The rows made off this card's device that MOE_ROUTED takes as src3: the CPU pool's call on a layer's CPU experts,
// the peer card's and the other engine's rows into their columns (the late ones computed by the pool), and which
// buffer src3 is for a window.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <cstring>

#include "hybrid_step_support.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"

namespace strata {

strata_tensor HybridMoe::precomputed_rows(uint32_t n_tok, uint32_t k) const {
  if (n_tok <= pool_max_tokens_) return tensor_f32(pool_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  if (chunk_window_) return tensor_f32(chunk_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  if (peer_window_) return peer_->rows_tensor(n_tok, k);
  return no_tensor();
}

double HybridMoe::run_pool(uint32_t il, uint32_t n_tok, const std::vector<experts::PlannedExpert>& cpu) {
  const auto t0 = clock_type::now();
  const LayerWeights& lw = model_.weights().layers[il];
  cpu_ids_.clear();
  cpu_weights_.clear();
  token_index_.clear();
  route_weight_.clear();
  columns_.clear();
  offsets_.assign(1, 0);
  const uint64_t expert_bytes = cache_->geometry().layers[il].expert_bytes;
  for (const experts::PlannedExpert& c : cpu) {  // ascending id, a subset of the grouped routes
    const auto [p0, p1] = pairs_of(c.expert);
    cpu_ids_.push_back(c.expert);
    cpu_weights_.push_back(arena_->weights(il, c.expert));
    token_index_.insert(token_index_.end(), routes_.token_index.begin() + p0, routes_.token_index.begin() + p1);
    route_weight_.insert(route_weight_.end(), routes_.route_weight.begin() + p0, routes_.route_weight.begin() + p1);
    columns_.insert(columns_.end(), routes_.route_index.begin() + p0, routes_.route_index.begin() + p1);
    offsets_.push_back(static_cast<uint32_t>(token_index_.size()));
  }
  rows_.resize(size_t{n_embd_} * columns_.size());
  const strata_moe_op m{n_embd_,
                        lw.experts.n_ff,
                        n_tok,
                        static_cast<uint32_t>(cpu_ids_.size()),
                        cpu_ids_.data(),
                        cpu_weights_.data(),
                        offsets_.data(),
                        token_index_.data(),
                        route_weight_.data(),
                        x_.data(),
                        rows_.data(),
                        lw.experts.form()};
  const auto t_call = clock_type::now();
  throw_if_error(pool_.table->compute(pool_.ctx, &m, nullptr, 0), pool_.name, "expert_pool.compute");
  // Each expert's matrices are read once a call, whatever its tokens.
  times_.pool.add_call(expert_bytes * cpu.size(), seconds_since(t_call));
  // Each pair's row to its column t * k + j of MOE_ROUTED's src3.
  for (size_t p = 0; p < columns_.size(); ++p) {
    std::memcpy(pool_rows_.data() + size_t{columns_[p]} * n_embd_, rows_.data() + p * n_embd_, n_embd_ * sizeof(float));
  }
  const double seconds = seconds_since(t0);
  times_.pool_s += seconds;
  ++times_.pool_layers;
  return seconds;
}

void HybridMoe::take_rows(const std::vector<experts::PlannedExpert>& experts, const float* rows) {
  for (const experts::PlannedExpert& p : experts) {
    const auto [p0, p1] = pairs_of(p.expert);
    for (uint32_t q = p0; q < p1; ++q) {
      const size_t column = routes_.route_index[q];
      std::memcpy(pool_rows_.data() + column * n_embd_, rows + column * n_embd_, n_embd_ * sizeof(float));
    }
  }
}

void HybridMoe::finish_link(uint32_t il, uint32_t n_tok) {
  const std::vector<experts::PlannedExpert>& late = link_->finish();
  if (late.empty()) {
    take_rows(link_experts_, link_->rows());
    return;
  }
  std::vector<experts::PlannedExpert> served;
  for (const experts::PlannedExpert& p : link_experts_) {
    if (std::find_if(late.begin(), late.end(), [&](const experts::PlannedExpert& q) { return q.expert == p.expert; }) == late.end()) {
      served.push_back(p);
    }
  }
  take_rows(served, link_->rows());
  (void)run_pool(il, n_tok, late);  // from this engine's RAM copy, into their columns
}

}  // namespace strata
