#include "link_tier.hpp"

#include <cstring>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"

namespace strata {

LinkTier::LinkTier(PluginInstance& plugin, const Model& model, uint32_t max_tokens, const std::string& fingerprint)
    : plugin_name_(plugin.name()) {
  link_ = plugin.get<strata_link_v1>(STRATA_LINK_FAMILY, STRATA_LINK_VERSION);
  if (link_ == nullptr) throw Error("plugin " + plugin.name() + " does not provide the link family (version 1)");
  ctx_ = plugin.ctx();
  const ModelWeights& w = model.weights();
  n_layer_ = static_cast<uint32_t>(w.layers.size());
  n_embd_ = model.hparams().n_embd;
  strata_link_geometry g{};
  for (const LayerWeights& lw : w.layers) {
    if (!lw.has_experts()) continue;
    n_expert_ = std::max(n_expert_, lw.routing.n_expert);
    g.k_max = std::max(g.k_max, lw.routing.k);
  }
  g.n_layer = n_layer_;
  g.n_expert = n_expert_;
  g.n_embd = n_embd_;
  g.max_tokens = max_tokens;
  std::strncpy(g.fingerprint, fingerprint.c_str(), sizeof(g.fingerprint) - 1);
  throw_if_error(link_->open(ctx_, &g), plugin_name_, "link.open");
  own_bits_.assign((size_t{n_layer_} * n_expert_ + 7) / 8, 0);
  peer_bits_ = own_bits_;
  throw_if_error(link_->outbox(ctx_, &request_), plugin_name_, "link.outbox");
}

std::optional<uint32_t> LinkTier::usable_slot(experts::ExpertKey key) const {
  if (!window_on_ || key.layer >= n_layer_ || key.expert >= n_expert_) return std::nullopt;
  const size_t bit = size_t{key.layer} * n_expert_ + key.expert;
  if ((peer_bits_[bit / 8] >> (bit % 8) & 1u) == 0) return std::nullopt;
  return 0;  // the other engine's slot is its own business: it looks the expert up when it serves
}

bool LinkTier::begin_window(bool usable) {
  window_on_ = usable && link_->peer_ready(ctx_) != 0 && link_->peer_residency(ctx_, peer_bits_.data()) != 0;
  if (window_on_) said_lost_ = false;
  return window_on_;
}

void LinkTier::publish_bits() { throw_if_error(link_->publish(ctx_, own_bits_.data()), plugin_name_, "link.publish"); }

void LinkTier::set_serving(bool on) {
  throw_if_error(link_->set_serving(ctx_, on ? 1 : 0), plugin_name_, "link.set_serving");
  serving_ = on;
}

void LinkTier::start(uint32_t il, uint32_t n_tok, uint32_t k, const float* x, const int32_t* ids, const float* weights,
                     std::span<const experts::PlannedExpert> experts) {
  started_at_ = std::chrono::steady_clock::now();
  started_.assign(experts.begin(), experts.end());
  for (size_t i = 0; i < experts.size(); ++i) request_.experts[i] = experts[i].expert;
  std::memcpy(request_.x, x, size_t{n_embd_} * n_tok * sizeof(float));
  std::memcpy(request_.ids, ids, size_t{k} * n_tok * sizeof(int32_t));
  std::memcpy(request_.weights, weights, size_t{k} * n_tok * sizeof(float));
  throw_if_error(link_->send(ctx_, il, n_tok, k, static_cast<uint32_t>(experts.size())), plugin_name_, "link.send");
  ++counts_.requests;
}

const std::vector<experts::PlannedExpert>& LinkTier::finish() {
  late_.clear();
  const bool answered = link_->await_answer(ctx_) != 0;
  counts_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
  if (!answered) {
    ++counts_.timeouts;
    late_ = started_;
    // Later layers of this window plan without the link: the view goes dark until the next window finds it ready.
    window_on_ = false;
    if (!said_lost_) {
      log::warn(std::string("peer link: the other engine did not answer in time or is gone (") +
                link_->describe(ctx_) + "); this engine goes on alone: its experts come from this card, PCIe and the pool");
      said_lost_ = true;
    }
  } else {
    for (size_t i = 0; i < started_.size(); ++i) {
      if (request_.served[i] != 0) {
        ++counts_.experts;
        counts_.pairs += started_[i].tokens;
      } else {
        late_.push_back(started_[i]);
      }
    }
  }
  counts_.late += late_.size();
  started_.clear();
  return late_;
}

std::string LinkTier::describe() const { return link_->describe(ctx_); }

}  // namespace strata
