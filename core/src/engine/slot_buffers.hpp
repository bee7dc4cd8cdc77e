// One card's expert slots: a device buffer per slot class (slot_budget.hpp), each slot laid out as the arena lays out
// its expert, so that filling a slot or reading a miss is one copy. The hybrid path's own card and the peer card
// (peer_tier.hpp) each have one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"
#include "strata/error.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/experts/expert_cache.hpp"
#include "strata/experts/slot_budget.hpp"
#include "expert_upload.hpp"

namespace strata {

class SlotBuffers {
 public:
  SlotBuffers() = default;
  // Allocates every class's slots on `mem`. Throws strata::Error when a class's slot size is not its layers' expert
  // size in the arena (a bug), or when the device has no room.
  SlotBuffers(const experts::SlotBudget& budget, const experts::ExpertArena& arena, DeviceMemory& mem) {
    for (const experts::SlotClass& c : budget.classes) {
      for (uint32_t il : c.layers) {
        if (arena.layout(il).bytes != c.slot_bytes) {
          throw Error("internal: layer " + std::to_string(il) + "'s experts take " + std::to_string(arena.layout(il).bytes) +
                      " bytes in the arena but " + std::to_string(c.slot_bytes) + " in a slot");
        }
      }
      classes_.push_back(c);
      buffers_.emplace_back(uint64_t{c.n_slots} * c.slot_bytes, &mem);
    }
  }

  void* address(uint32_t slot) const {
    for (size_t c = 0; c < classes_.size(); ++c) {
      const experts::SlotClass& k = classes_[c];
      if (slot >= k.first_slot && slot < k.first_slot + k.n_slots) {
        return buffers_[c].data() + uint64_t{slot - k.first_slot} * k.slot_bytes;
      }
    }
    throw Error("internal: slot " + std::to_string(slot) + " is in no slot class");
  }

  // Queues each resident of `cache` from the host copy into its slot on `stream`; the caller waits.
  void queue_fill(const experts::ExpertCache& cache, ExpertUpload& upload, strata_stream stream) const {
    for (uint32_t s = 0; s < cache.n_slots(); ++s) {
      const auto key = cache.content(s);
      if (!key) continue;
      upload.copy(address(s), key->layer, key->expert, stream, true);  // before decode: the pool is idle
    }
  }

 private:
  std::vector<experts::SlotClass> classes_;
  std::vector<Buffer<unsigned char>> buffers_;
};

}  // namespace strata
