#include "peer_tier.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "strata/error.hpp"
#include "strata/op_tensor.hpp"

namespace strata {
namespace {

DeviceMemory& peer_card_memory(Backend& b) {
  if (b.device_memory() == nullptr || b.device_queues() == nullptr) {
    throw Error("runtime.peer_device: the backend " + b.name() +
                " has no device memory and streams; a peer card needs a GPU backend (cuda, hip)");
  }
  return *b.device_memory();
}

}  // namespace

PeerTier::PeerTier(Backend& backend, const Model& model, const experts::ExpertArena& arena, uint32_t max_tokens)
    : backend_(backend),
      mem_(peer_card_memory(backend)),
      queues_(*backend.device_queues()),
      model_(model),
      arena_(arena),
      work_(model, arena, mem_, max_tokens) {
  stamps_ = Buffer<int64_t>::mapped(2, mem_);
  strata_op stamp = new_op(STRATA_OP_TIMESTAMP);
  stamp.dst = make_tensor(stamps_.data(), format::GgmlType::I64, {1});
  stamping_ = backend_.supports(stamp);
  done_ = std::make_unique<DeviceEvent>(queues_);
  fill_stream_ = std::make_unique<DeviceStream>(queues_);
}

PeerTier::~PeerTier() {
  try {
    if (started_) queues_.synchronize(done_->get());
  } catch (const Error&) {
  }
}

experts::DeviceRoom PeerTier::room() const {
  experts::DeviceRoom room;
  room.free_bytes = mem_.room_bytes();
  room.cap_bytes = mem_.cap();
  return room;
}

void PeerTier::set_cache(std::unique_ptr<experts::ExpertCache> cache) {
  cache_ = std::move(cache);
  const double s = fill_slots();
  description_ = "peer card " + mem_.device_name() + " (" + backend_.describe() + "): " + cache_->budget().describe() +
                 ", filled in " + std::to_string(s).substr(0, 4) +
                 " s; activations in and rows out through mapped host memory (no NVLink peer copies)";
}

double PeerTier::fill_slots() {
  const auto t0 = std::chrono::steady_clock::now();
  slots_ = SlotBuffers(cache_->budget(), arena_, mem_);
  ExpertUpload upload(arena_, mem_, queues_);  // the fill's own (a ring on this card's queues, for the file)
  slots_.queue_fill(*cache_, upload, fill_stream_->get());
  DeviceEvent filled(queues_);
  queues_.record(filled.get(), fill_stream_->get());
  queues_.synchronize(filled.get());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string PeerTier::release() {
  if (!attached_) throw Error("the peer card is detached already");
  const uint64_t bytes = cache_->budget().used_bytes;
  slots_ = SlotBuffers();
  attached_ = false;
  return "the peer card's " + std::to_string(cache_->n_slots()) + " slots (" + std::to_string(bytes >> 20) +
         " MiB) given back; its experts are read over PCIe or computed by the pool";
}

std::string PeerTier::restore() {
  if (attached_) throw Error("the peer card is attached already");
  const double s = fill_slots();
  attached_ = true;
  return "the peer card's " + std::to_string(cache_->n_slots()) + " slots refilled from the host arena in " +
         std::to_string(s).substr(0, 5) + " s";
}

bool PeerTier::runs(uint32_t n_tok) const {
  if (n_tok == 0 || n_tok > work_.max_tokens()) return false;
  for (uint32_t il = 0; il < model_.weights().layers.size(); ++il) {
    if (work_.has_experts(il) && !backend_.supports(work_.op(il, n_tok))) return false;
  }
  return true;
}

void PeerTier::start(uint32_t il, uint32_t n_tok, const float* x, const int32_t* ids, const float* weights,
                     std::span<const experts::PlannedExpert> experts) {
  if (started_) finish();  // a layer left unfinished by an error: wait for it before its buffers are rewritten
  if (n_tok > work_.max_tokens()) throw Error("internal: a window of " + std::to_string(n_tok) + " tokens for the peer card");
  started_at_ = std::chrono::steady_clock::now();
  work_.load(il, n_tok, x, ids, weights);
  // The table: the peer's experts at their slots, every other entry NULL (computed elsewhere, so skipped here).
  const experts::ExpertLayout& layout = arena_.layout(il);
  strata_expert_weights* entries = work_.clear_entries(il);
  uint64_t pairs = 0;
  for (const experts::PlannedExpert& p : experts) {
    if (p.device != 1) throw Error("internal: a PEER expert planned on device " + std::to_string(p.device));
    entries[p.expert] = layout.at(slots_.address(p.slot));
    pairs += p.tokens;
  }
  work_.enqueue_entries(queues_, il);
  std::vector<strata_op> ops;
  strata_op stamp = new_op(STRATA_OP_TIMESTAMP);
  if (stamping_) {
    stamp.dst = make_tensor(stamps_.data(), format::GgmlType::I64, {1});
    ops.push_back(stamp);
  }
  ops.push_back(work_.op(il, n_tok));
  if (stamping_) {
    stamp.dst = make_tensor(stamps_.data() + 1, format::GgmlType::I64, {1});
    ops.push_back(stamp);
  }
  queues_.compute_async(ops);
  queues_.record(done_->get(), nullptr);
  started_ = true;
  ++times_.layers;
  times_.experts += experts.size();
  times_.pairs += pairs;
}

void PeerTier::finish() {
  if (!started_) return;
  started_ = false;
  queues_.synchronize(done_->get());
  const double round_trip = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
  times_.round_trip_s += round_trip;
  times_.busy_s += stamping_ && stamps_[1] >= stamps_[0] && stamps_[0] > 0 ? 1e-9 * static_cast<double>(stamps_[1] - stamps_[0])
                                                                             : round_trip;
}

}  // namespace strata
