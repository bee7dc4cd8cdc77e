#include "strata/experts/planner.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strata/error.hpp"

namespace strata::experts {

std::string_view source_name(ExpertSource source) {
  switch (source) {
    case ExpertSource::Hit: return "hit";
    case ExpertSource::Peer: return "peer";
    case ExpertSource::Pcie: return "pcie";
    case ExpertSource::Cpu: return "cpu";
  }
  return "?";
}

const std::vector<PlannedExpert>& LayerPlan::of(ExpertSource source) const {
  switch (source) {
    case ExpertSource::Hit: return hit;
    case ExpertSource::Peer: return peer;
    case ExpertSource::Pcie: return pcie;
    case ExpertSource::Cpu: return cpu;
  }
  return cpu;
}

namespace {

void check_pcie_frac(double f) {
  if (!(f >= 0.0 && f <= 1.0))
    throw Error("experts.pcie_frac: " + std::to_string(f) + " is not a share between 0 and 1");
}

bool by_expert(const PlannedExpert& a, const PlannedExpert& b) { return a.expert < b.expert; }

}  // namespace

Planner::Planner(ExpertGeometry geometry, std::vector<const ResidencyView*> devices, double pcie_frac)
    : geometry_(std::move(geometry)), devices_(std::move(devices)) {
  if (devices_.empty() || std::find(devices_.begin(), devices_.end(), nullptr) != devices_.end())
    throw Error("planner: every device needs a residency view (device 0 is this engine's)");
  set_pcie_frac(pcie_frac);
}

void Planner::set_pcie_frac(double pcie_frac) {
  check_pcie_frac(pcie_frac);
  pcie_frac_ = pcie_frac;
}

uint32_t Planner::default_pcie_count(uint32_t misses) const {
  return static_cast<uint32_t>(std::llround(pcie_frac_ * static_cast<double>(misses)));
}

LayerPlan Planner::plan(uint32_t layer, std::span<const ExpertUse> uses) const {
  if (layer >= geometry_.n_layer() || geometry_.layers[layer].n_expert == 0)
    throw Error("planner: layer " + std::to_string(layer) + " has no routed experts");
  const uint32_t n_expert = geometry_.layers[layer].n_expert;
  std::vector<uint32_t> ids;
  ids.reserve(uses.size());
  for (const ExpertUse& u : uses) {
    if (u.expert >= n_expert)
      throw Error("planner: layer " + std::to_string(layer) + " expert " + std::to_string(u.expert) +
                  " is past the layer's " + std::to_string(n_expert) + " experts");
    ids.push_back(u.expert);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end())
    throw Error("planner: layer " + std::to_string(layer) + " expert " + std::to_string(*dup) + " is listed twice");

  LayerPlan plan;
  plan.layer = layer;
  std::vector<ExpertUse> misses;
  for (const ExpertUse& u : uses) {
    const ExpertKey key{layer, u.expert};
    bool placed = false;
    for (size_t d = 0; d < devices_.size() && !placed; ++d) {
      if (const std::optional<uint32_t> slot = devices_[d]->usable_slot(key)) {
        (d == 0 ? plan.hit : plan.peer).push_back({u.expert, u.tokens, static_cast<uint32_t>(d), *slot});
        placed = true;
      }
    }
    if (!placed) misses.push_back(u);
  }

  std::sort(misses.begin(), misses.end(), [](const ExpertUse& a, const ExpertUse& b) {
    return a.tokens != b.tokens ? a.tokens > b.tokens : a.expert < b.expert;
  });
  const uint32_t n_misses = static_cast<uint32_t>(misses.size());
  const uint32_t m = std::min(hook_ ? hook_(layer, misses) : default_pcie_count(n_misses), n_misses);
  for (uint32_t i = 0; i < n_misses; ++i)
    (i < m ? plan.pcie : plan.cpu).push_back({misses[i].expert, misses[i].tokens, 0, 0});

  for (std::vector<PlannedExpert>* list : {&plan.hit, &plan.peer, &plan.pcie, &plan.cpu})
    std::sort(list->begin(), list->end(), by_expert);
  return plan;
}

}  // namespace strata::experts
