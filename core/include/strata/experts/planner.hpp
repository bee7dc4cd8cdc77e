// The per-layer plan of a window: each distinct expert the router chose is a HIT (in this device's slots), PEER
// (in another device's slots: the peer card, or another engine's card through its link), or a miss; of the
// misses, m are read over PCIe and the rest computed by the CPU pool.
//
// m is round(pcie_frac x misses) unless a hook (the balancer) says otherwise. The misses with the most tokens go
// over PCIe first: a copy costs the same whatever the token count, while the pool's cost grows with tokens.
// Equal token counts go by expert id. Every list of a plan is in ascending expert id.
// plan() only reads the devices' views; a commit into a view must not run while a plan reads it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/expert_key.hpp"
#include "strata/experts/residency_view.hpp"

namespace strata::experts {

enum class ExpertSource : uint8_t { Hit, Peer, Pcie, Cpu };
inline constexpr std::array<ExpertSource, 4> kExpertSources = {ExpertSource::Hit, ExpertSource::Peer,
                                                               ExpertSource::Pcie, ExpertSource::Cpu};
// "hit", "peer", "pcie", "cpu"
std::string_view source_name(ExpertSource source);

struct PlannedExpert {
  uint32_t expert = 0;
  uint32_t tokens = 0;
  uint32_t device = 0;  // HIT: 0; PEER: the device whose slot holds it; misses: 0
  uint32_t slot = 0;    // HIT and PEER: the slot on that device; misses: 0
  bool operator==(const PlannedExpert&) const = default;
};

struct LayerPlan {
  uint32_t layer = 0;
  std::vector<PlannedExpert> hit, peer, pcie, cpu;
  const std::vector<PlannedExpert>& of(ExpertSource source) const;
};

// How many of a layer's misses go over PCIe, given the misses in the order they would be taken (most tokens
// first). A result above misses.size() takes them all.
using PcieCountHook = std::function<uint32_t(uint32_t layer, std::span<const ExpertUse> misses)>;

class Planner {
 public:
  // devices[0] is this engine's device (its slots are HITs); the others are PEER tiers, tried in order. Views
  // must outlive the planner. Throws strata::Error for a pcie_frac outside 0..1 or no devices.
  Planner(ExpertGeometry geometry, std::vector<const ResidencyView*> devices, double pcie_frac);

  double pcie_frac() const { return pcie_frac_; }
  void set_pcie_frac(double pcie_frac);
  // An empty hook restores round(pcie_frac x misses).
  void set_pcie_count_hook(PcieCountHook hook) { hook_ = std::move(hook); }
  uint32_t default_pcie_count(uint32_t misses) const;

  const ExpertGeometry& geometry() const { return geometry_; }
  size_t n_devices() const { return devices_.size(); }

  // Throws strata::Error for an expert the layer does not have, or one listed twice.
  LayerPlan plan(uint32_t layer, std::span<const ExpertUse> uses) const;

 private:
  ExpertGeometry geometry_;
  std::vector<const ResidencyView*> devices_;
  double pcie_frac_ = 0;
  PcieCountHook hook_;
};

}  // namespace strata::experts
