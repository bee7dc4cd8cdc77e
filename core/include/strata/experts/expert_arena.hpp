// The host copy of every routed expert that the hybrid path reads its misses from: the CPU pool computes from it
// and PCIe copies read it. Each expert's matrices lie together, [gate | up | down], one expert after another and
// layer after layer, so that a missed expert crosses the link as one copy into a slot of the same layout.
//
// It is anonymous memory filled from the mapped GGUF at start, not the mapping itself: page-locking a mapping of a
// file on a disk file system never returned on the GPU machine, while anonymous memory registers at once
// (docs/ARCHITECTURE.md, "Registered host memory"). The price is a second copy of the experts in RAM.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/plugin_api.h"

namespace strata {
struct ModelWeights;
}

namespace strata::experts {

// Where each matrix sits inside one expert's bytes.
struct ExpertLayout {
  uint64_t gate = 0, up = 0, down = 0;  // offsets
  uint64_t bytes = 0;                   // the expert's total
  uint32_t gate_type = 0, up_type = 0, down_type = 0;
  // The matrices of the expert whose bytes start at base, in the layout (host or device addresses alike).
  strata_expert_weights at(const void* base) const;
};

class ExpertArena {
 public:
  // Copies every layer's routed experts (gate, up and down stacks) with `threads` threads. Throws strata::Error
  // for fused gate_up stacks or per-expert biases (no hybrid layout for them yet), or when memory runs out.
  ExpertArena(const ModelWeights& weights, unsigned threads);
  ~ExpertArena();
  ExpertArena(const ExpertArena&) = delete;
  ExpertArena& operator=(const ExpertArena&) = delete;

  // Layer il's layout (bytes 0 for a layer without routed experts).
  const ExpertLayout& layout(uint32_t il) const { return layers_[il].layout; }
  const unsigned char* expert(uint32_t il, uint32_t e) const {
    return base_ + layers_[il].offset + uint64_t{e} * layers_[il].layout.bytes;
  }
  unsigned char* data() const { return base_; }
  uint64_t size() const { return size_; }
  double fill_seconds() const { return fill_seconds_; }

 private:
  struct Layer {
    ExpertLayout layout;
    uint64_t offset = 0;
    uint32_t n_expert = 0;
  };
  std::vector<Layer> layers_;
  unsigned char* base_ = nullptr;
  uint64_t size_ = 0;
  double fill_seconds_ = 0;
};

}  // namespace strata::experts
