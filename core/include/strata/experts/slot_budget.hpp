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
  uint64_t cap_bytes = 0;  // runtime.gpu_memory when set (free_bytes is then at most this): named in messages
  std::string kv_what;     // "262144 tokens x 1 slot, q8_0": the KV cache's shape, for describe_split

  uint64_t reserved_bytes() const;
};

// Throws strata::Error naming the parts and the fixes when the reserved parts (dense weights, KV cache, activations,
// staging, margin) do not fit in free_bytes. `what` starts the message ("experts.cache"); `before_slots`: the
// parts are what must fit before any expert slot (the hybrid path), not the whole model.
void check_room(const DeviceRoom& room, const std::string& what, bool before_slots = true);

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

// One line saying how a device's room was split, for the log: "experts.cache auto: 24.0 GiB (runtime.gpu_memory) =
// the dense weights 1.5 GiB + KV cache 12.8 GiB (262144 tokens x 1 slot, q8_0) + activations 40.0 MiB + PCIe
// staging and the hybrid path's buffers 300.0 MiB + margin 512.0 MiB + expert slots 9.1 GiB (...) + 12.0 MiB
// unused". `room` as planned before anything was placed (free_bytes: what the engine could use then); `slots` as
// placed.
std::string describe_split(const config::CacheSize& size, const DeviceRoom& room, const SlotBudget& slots);

}  // namespace strata::experts
