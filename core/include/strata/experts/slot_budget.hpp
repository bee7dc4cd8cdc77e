// How many expert slots one device's cache gets, from `experts.cache` and the model's expert geometry.
//
// A slot holds one expert's matrices. Slots come in classes, one per distinct expert size: layers whose experts
// have the same bytes share a class, and a class's slots hold only its layers' experts. Sizing every slot to the
// largest expert would waste the difference on every smaller expert (q4_K_M's layers with q4_K down against
// those with q6_K down: 15% of each such slot); with classes nothing is wasted, at the price that adaptive swaps
// move an expert only into a slot of its own class. Most models have one class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/config.hpp"
#include "strata/experts/expert_geometry.hpp"

namespace strata::experts {

// What else must fit on the device beside the expert slots. `free_bytes` is the device's free memory before the
// engine placed anything (the other fields are then subtracted from it); measured after placing the dense
// weights, pass dense_bytes 0.
struct DeviceRoom {
  uint64_t free_bytes = 0;
  uint64_t dense_bytes = 0;       // the weights kept on the device that are not routed experts
  uint64_t kv_bytes = 0;          // the KV cache
  uint64_t activation_bytes = 0;  // activations and kernel scratch
  uint64_t staging_bytes = 0;     // staging slots for experts read over PCIe
  // Kept free for what the engine does not account: the runtime's own allocations, graphs, allocator rounding.
  uint64_t margin_bytes = uint64_t{512} << 20;

  uint64_t reserved_bytes() const;
};

struct SlotClass {
  uint64_t slot_bytes = 0;
  uint32_t first_slot = 0;  // the class holds slots [first_slot, first_slot + n_slots)
  uint32_t n_slots = 0;
  std::vector<uint32_t> layers;  // ascending
};

struct SlotBudget {
  uint64_t budget_bytes = 0;  // what experts.cache allows, capped at every routed expert's bytes
  uint64_t used_bytes = 0;    // the slots' bytes (<= budget_bytes)
  uint64_t routed_bytes = 0;  // every routed expert's bytes, for "x% of the experts"
  std::vector<SlotClass> classes;
  std::vector<uint32_t> layer_class;  // per layer: its class; only meaningful for layers with experts
  // Per layer: the slots an even spread gives it (equal counts; a remainder that does not make a whole round
  // goes one each to the first layers it fits). The classes' sizes are these counts summed, so the uniform fill
  // uses exactly these, and a profile fill redistributes each class's slots among its layers.
  std::vector<uint32_t> layer_slots;

  uint32_t total_slots() const;
  // "96 slots (12.0 MiB, 37.5% of the routed experts' 32.0 MiB) in 2 classes: 48 x 128.0 KiB, 48 x 144.0 KiB"
  std::string describe() const;
};

// The slots for a cache size on a device. Throws strata::Error when the dense part alone does not fit, or when a
// size given in bytes or percent is more than the room left after the dense weights, KV cache, activations,
// staging and margin. A budget above every routed expert's bytes is capped (the whole model then fits).
SlotBudget plan_slot_budget(const config::CacheSize& size, const ExpertGeometry& geometry, const DeviceRoom& room);

}  // namespace strata::experts
