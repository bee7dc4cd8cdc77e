#include "strata/experts/expert_arena.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "strata/error.hpp"
#include "strata/format/types.hpp"
#include "strata/model.hpp"

namespace strata::experts {

strata_expert_weights ExpertLayout::at(const void* base) const {
  const auto* b = static_cast<const unsigned char*>(base);
  return strata_expert_weights{b + gate, b + up, b + down, gate_type, up_type, down_type, 0};
}

namespace {

uint64_t matrix_bytes(Tensor t) { return format::row_bytes(t->type, t->ne[0]) * t->ne[1]; }

}  // namespace

ExpertArena::ExpertArena(const ModelWeights& weights, unsigned threads) {
  const auto start = std::chrono::steady_clock::now();
  layers_.resize(weights.layers.size());
  for (size_t il = 0; il < weights.layers.size(); ++il) {
    const LayerWeights& lw = weights.layers[il];
    if (!lw.has_experts()) continue;
    const ExpertStack& s = lw.experts;
    if (s.gate == nullptr || s.up == nullptr || s.down == nullptr || s.gate_up != nullptr || s.gate_bias != nullptr ||
        s.up_bias != nullptr || s.down_bias != nullptr) {
      throw Error("layer " + std::to_string(il) +
                  ": the hybrid expert path takes separate gate, up and down stacks without biases; this model's "
                  "experts need all of VRAM (set experts.cache: auto on a card that holds them, or use a CPU backend)");
    }
    Layer& l = layers_[il];
    l.n_expert = lw.routing.n_expert;
    l.layout.gate = 0;
    l.layout.up = matrix_bytes(s.gate);
    l.layout.down = l.layout.up + matrix_bytes(s.up);
    l.layout.bytes = l.layout.down + matrix_bytes(s.down);
    l.layout.gate_type = static_cast<uint32_t>(s.gate->type);
    l.layout.up_type = static_cast<uint32_t>(s.up->type);
    l.layout.down_type = static_cast<uint32_t>(s.down->type);
    l.offset = size_;
    size_ += uint64_t{l.n_expert} * l.layout.bytes;
  }
  if (size_ == 0) return;
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw Error("cannot reserve " + std::to_string(size_ >> 20) + " MiB of RAM for the host copy of the experts: " +
                std::strerror(errno));
  }
  base_ = static_cast<unsigned char*>(p);
  (void)madvise(p, size_, MADV_HUGEPAGE);  // fewer page faults while filling; a hint only

  // Work items: one (layer, expert) each, taken in order by the threads.
  std::vector<std::pair<uint32_t, uint32_t>> items;
  for (uint32_t il = 0; il < layers_.size(); ++il) {
    for (uint32_t e = 0; e < layers_[il].n_expert; ++e) items.emplace_back(il, e);
  }
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      const auto [il, e] = items[i];
      const strata_expert_weights src = weights.layers[il].experts.expert(e);
      const ExpertLayout& l = layers_[il].layout;
      unsigned char* dst = base_ + layers_[il].offset + uint64_t{e} * l.bytes;
      std::memcpy(dst + l.gate, src.gate, l.up - l.gate);
      std::memcpy(dst + l.up, src.up, l.down - l.up);
      std::memcpy(dst + l.down, src.down, l.bytes - l.down);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  fill_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ExpertArena::~ExpertArena() {
  if (base_ != nullptr) munmap(base_, size_);
}

}  // namespace strata::experts
