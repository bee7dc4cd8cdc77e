#include "expert_upload.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "../experts/human_bytes.hpp"
#include "strata/log.hpp"

namespace strata {

ExpertUpload::ExpertUpload(const experts::ExpertArena& arena, DeviceMemory& mem, DeviceQueues& queues, Options o)
    : arena_(arena), queues_(queues) {
  if (arena.contiguous() || arena.size() == 0) return;
  if (o.register_file) register_ranges(o);
  // The ring even when every range registered: a matrix across two pieces is staged.
  ring_bytes_ = std::max<uint64_t>(o.ring_bytes, 1 << 16);
  if (o.fill_threads > 1) filler_ = std::make_unique<ParallelCopy>(o.fill_threads);
  for (uint32_t b = 0; b < std::max(2u, o.ring_buffers); ++b) {
    ring_.push_back(Buffer<unsigned char>::mapped(ring_bytes_, mem));
    landed_.push_back(std::make_unique<DeviceEvent>(queues));
    in_flight_.push_back(false);
  }
}

ExpertUpload::~ExpertUpload() {
  try {
    drain();
  } catch (...) {
  }
  for (const Registered& r : pieces_) queues_.unregister_host(const_cast<unsigned char*>(r.p));
}

void ExpertUpload::register_ranges(const Options& o) {
  register_tried_ = true;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t piece = std::max<uint64_t>(o.register_piece / page * page, page);
  const auto t0 = std::chrono::steady_clock::now();
  const auto spent = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (const experts::ExpertArena::Range& r : arena_.ranges()) {
    const auto a = reinterpret_cast<uintptr_t>(r.p) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(r.p) + r.bytes + page - 1) / page * page;
    wanted_bytes_ += end - a;
    for (uintptr_t at = a; at < end; at += piece) {
      if (!register_why_.empty()) continue;
      const uint64_t bytes = std::min<uint64_t>(piece, end - at);
      auto* p = reinterpret_cast<unsigned char*>(at);
      // Read the piece's pages in first (one load a page): the driver then pins pages that are in memory.
      volatile unsigned char sink = 0;
      for (uint64_t off = 0; off < bytes; off += page) sink = static_cast<unsigned char>(sink ^ p[off]);
      std::string why;
      if (!queues_.register_host(p, bytes, true, why)) {
        register_why_ = why.empty() ? "the device refused" : why;
        continue;
      }
      pieces_.push_back({p, bytes});
      registered_bytes_ += bytes;
      if (spent() > o.register_budget_s) {
        register_why_ = "stopped after " + std::to_string(o.register_budget_s).substr(0, 4) + " s";
      }
    }
  }
  register_s_ = spent();
  std::sort(pieces_.begin(), pieces_.end(), [](const Registered& x, const Registered& y) { return x.p < y.p; });
  if (!register_why_.empty()) {
    log::warn("experts.host_copy file_registered: " + experts::human_bytes(registered_bytes_) + " of " +
              experts::human_bytes(wanted_bytes_) + " of the model's expert pages registered (" + register_why_ +
              "); the rest is staged through pinned buffers");
  }
}

bool ExpertUpload::registered(const unsigned char* p, uint64_t bytes) const {
  if (pieces_.empty()) return false;
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), p, [](const unsigned char* x, const Registered& r) { return x < r.p; });
  if (it == pieces_.begin()) return false;
  --it;
  return p >= it->p && p + bytes <= it->p + it->bytes;
}

void ExpertUpload::take(uint32_t b) {
  if (in_flight_[b]) {
    queues_.synchronize(landed_[b]->get());
    in_flight_[b] = false;
  }
}

void ExpertUpload::flush(strata_stream s) {
  if (fill_ == 0) return;
  if (!gathered_.empty()) {
    filler_->copy(gathered_);
    gathered_.clear();
  }
  queues_.copy_async(run_dst_, ring_[cur_].data(), fill_, STRATA_COPY_HOST_TO_DEVICE, s);
  queues_.record(landed_[cur_]->get(), s);
  in_flight_[cur_] = true;
  staged_bytes_ += fill_;
  cur_ = (cur_ + 1) % static_cast<uint32_t>(ring_.size());
  fill_ = 0;
}

void ExpertUpload::copy(void* dst, uint32_t il, uint32_t e, strata_stream s, bool wide) {
  const Target t{dst, e};
  copy_experts(std::span<const Target>(&t, 1), il, s, wide);
}

void ExpertUpload::copy_experts(std::span<const Target> targets, uint32_t il, strata_stream s, bool wide) {
  if (targets.empty()) return;
  const experts::ExpertLayout& layout = arena_.layout(il);
  std::lock_guard<std::mutex> lock(mutex_);
  batch_dst_.clear();
  batch_src_.clear();
  batch_bytes_.clear();
  const auto direct = [&](void* to, const void* from, uint64_t bytes) {
    batch_dst_.push_back(to);
    batch_src_.push_back(from);
    batch_bytes_.push_back(bytes);
    direct_bytes_ += bytes;
  };
  if (arena_.contiguous()) {
    for (const Target& t : targets) direct(t.dst, arena_.expert(il, t.expert), layout.bytes);
    queues_.copy_batch_async(batch_dst_, batch_src_, batch_bytes_, STRATA_COPY_HOST_TO_DEVICE, s);
    return;
  }
  // The registered slices first, as one batch: the link starts on them while this thread fills the ring with the
  // others. The order among a call's copies does not matter (their destinations are apart); events recorded on the
  // stream after the call cover them all.
  experts::ExpertArena::Piece pieces[3];
  bool staged = false;
  for (const Target& t : targets) {
    arena_.pieces(il, t.expert, pieces);
    for (const experts::ExpertArena::Piece& m : pieces) {
      if (registered(m.src, m.bytes)) {
        direct(static_cast<unsigned char*>(t.dst) + m.offset, m.src, m.bytes);
      } else {
        staged = true;
      }
    }
  }
  queues_.copy_batch_async(batch_dst_, batch_src_, batch_bytes_, STRATA_COPY_HOST_TO_DEVICE, s);
  if (!staged) return;
  for (const Target& t : targets) {
    auto* d = static_cast<unsigned char*>(t.dst);
    arena_.pieces(il, t.expert, pieces);
    for (const experts::ExpertArena::Piece& m : pieces) {
      if (registered(m.src, m.bytes)) continue;
      for (uint64_t off = 0; off < m.bytes;) {
        unsigned char* at = d + m.offset + off;
        if (fill_ > 0 && (fill_ == ring_bytes_ || run_dst_ + fill_ != at)) flush(s);
        if (fill_ == 0) {
          take(cur_);
          run_dst_ = at;
        }
        const uint64_t n = std::min(ring_bytes_ - fill_, m.bytes - off);
        if (wide && filler_) {
          gathered_.push_back({ring_[cur_].data() + fill_, m.src + off, n});  // copied as one job at the flush
        } else {
          std::memcpy(ring_[cur_].data() + fill_, m.src + off, n);
        }
        fill_ += n;
        off += n;
      }
    }
  }
  flush(s);
}

void ExpertUpload::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint32_t b = 0; b < ring_.size(); ++b) take(b);
}

std::string ExpertUpload::describe() const {
  if (arena_.contiguous()) return "PCIe copies read it directly";
  std::string s;
  if (register_tried_) {
    char t[32];
    std::snprintf(t, sizeof t, "%.1f", register_s_);
    s = experts::human_bytes(registered_bytes_) + " of " + experts::human_bytes(wanted_bytes_) +
        " registered in " + t + " s" + (register_why_.empty() ? "" : " (" + register_why_ + ")");
    s += ", the rest ";
  } else {
    s = "PCIe copies ";
  }
  s += "staged through " + std::to_string(ring_.size()) + " x " + experts::human_bytes(ring_bytes_) + " pinned buffers";
  if (filler_) s += " (filled on " + std::to_string(filler_->threads()) + " threads for prompt windows and the first fill)";
  return s;
}

}  // namespace strata
