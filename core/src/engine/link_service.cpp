#include "link_service.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/op_tensor.hpp"

namespace strata {
namespace {

DeviceMemory& served_card_memory(Backend& b) {
  if (b.device_memory() == nullptr || b.device_queues() == nullptr) {
    throw Error("peer link: the backend " + b.name() + " has no device memory and streams; the link serves a GPU's experts");
  }
  return *b.device_memory();
}

}  // namespace

LinkService::LinkService(LinkTier& link, Backend& device, const Model& model, const experts::ExpertArena& arena,
                         uint32_t max_tokens, std::mutex& card_lock, SlotAddress slot_address)
    : link_(link),
      device_(device),
      mem_(served_card_memory(device)),
      queues_(*device.device_queues()),
      model_(model),
      arena_(arena),
      n_embd_(model.hparams().n_embd),
      card_lock_(card_lock),
      slot_address_(std::move(slot_address)),
      work_(model, arena, mem_, max_tokens) {
  done_ = std::make_unique<DeviceEvent>(queues_);
  if (!work_.supported([this](const strata_op& op) { return device_.supports(op); })) {
    throw Error("peer link: " + device.describe() + " does not run MOE_ROUTED with rows out (backend 1.4) for this "
                "model's experts, so it cannot serve the other engine; switch the link off (plugins.peerlink.enabled: false)");
  }
}

LinkService::~LinkService() {
  try {
    set_serving(false);
  } catch (const Error& e) {
    log::warn(std::string("peer link: ") + e.what());
  }
}

void LinkService::set_serving(bool on) {
  if (on == serving()) return;
  if (on) {
    stop_ = false;
    thread_ = std::thread([this] { run(); });
    link_.set_serving(true);
  } else {
    link_.set_serving(false);
    stop_ = true;
    thread_.join();
  }
}

ServiceCounts LinkService::counts() const {
  std::lock_guard<std::mutex> lock(counts_mutex_);
  return counts_;
}

void LinkService::reset_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex_);
  counts_ = ServiceCounts{};
}

void LinkService::run() {
  const strata_link_v1& t = link_.table();
  strata_link_request r{};
  while (!stop_.load(std::memory_order_relaxed)) {
    if (t.next_request(link_.ctx(), 2000, &r) == 0) continue;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      serve(r);
    } catch (const std::exception& e) {
      // The device failed under us: the requester's deadline covers it; this engine stops serving.
      log::warn(std::string("peer link: serving the other engine failed (") + e.what() + "); this engine stops serving");
      (void)t.set_serving(link_.ctx(), 0);
      return;
    }
    t.answer(link_.ctx());
    std::lock_guard<std::mutex> lock(counts_mutex_);
    ++counts_.requests;
    counts_.busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

void LinkService::serve(const strata_link_request& r) {
  std::fill(r.served, r.served + r.n_experts, uint8_t{0});
  // A request this engine's model would not have made (another geometry got past the file's checks, or a torn
  // write): answered with nothing served, so the requester computes it all itself.
  const bool layer_ok = work_.has_experts(r.layer);
  const LayerWeights* lw = layer_ok ? &model_.weights().layers[r.layer] : nullptr;
  bool ok = layer_ok && r.n_tok >= 1 && r.n_tok <= work_.max_tokens() && r.k == lw->routing.k && r.n_experts <= lw->routing.n_expert;
  const uint32_t n_expert = ok ? lw->routing.n_expert : 0;
  for (size_t i = 0; ok && i < size_t{r.k} * r.n_tok; ++i) ok = r.ids[i] >= 0 && static_cast<uint32_t>(r.ids[i]) < n_expert;
  for (uint32_t i = 0; ok && i < r.n_experts; ++i) ok = r.experts[i] < n_expert && (i == 0 || r.experts[i] > r.experts[i - 1]);
  if (!ok) {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    ++counts_.refused;
    return;
  }
  const experts::ExpertLayout& layout = arena_.layout(r.layer);
  strata_expert_weights* entries = work_.clear_entries(r.layer);
  std::lock_guard<std::mutex> card(card_lock_);
  uint32_t held = 0;
  for (uint32_t i = 0; i < r.n_experts; ++i) {
    const void* at = slot_address_(r.layer, r.experts[i]);
    if (at == nullptr) continue;
    entries[r.experts[i]] = layout.at(at);
    r.served[i] = 1;
    ++held;
  }
  {
    std::lock_guard<std::mutex> lock(counts_mutex_);
    counts_.experts += held;
    counts_.not_held += r.n_experts - held;
  }
  if (held == 0) return;
  work_.load(r.layer, r.n_tok, r.x, r.ids, r.weights);
  work_.enqueue_entries(queues_, r.layer);
  const strata_op op = work_.op(r.layer, r.n_tok);
  queues_.compute_async(std::span<const strata_op>(&op, 1));
  queues_.record(done_->get(), nullptr);
  queues_.synchronize(done_->get());
  std::memcpy(r.rows, work_.rows(), size_t{n_embd_} * r.k * r.n_tok * sizeof(float));
}

}  // namespace strata
