// The expert counts in Prometheus' text exposition format.
#include <string>
#include <string_view>
#include <utility>

#include "strata/experts/expert_report.hpp"

namespace strata::experts {

namespace {

class Exposition {
 public:
  void family(const char* name, const char* type, const char* help) {
    name_ = name;
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  // labels: `layer="3",source="pcie"` or empty.
  void sample(const std::string& labels, uint64_t value) {
    text_ += name_ + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(value) + "\n";
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_, name_;
};

std::string label(const char* name, uint64_t value) { return std::string(name) + "=\"" + std::to_string(value) + "\""; }
std::string label(const char* name, std::string_view value) {
  return std::string(name) + "=\"" + std::string(value) + "\"";
}

}  // namespace

std::string render_expert_metrics(const ExpertStats& cache, const PlanCounters* plans, MetricsDetail detail) {
  Exposition x;
  const auto per_layer = [&](const char* name, const char* help, uint64_t HitCounts::*field) {
    x.family(name, "counter", help);
    for (uint32_t l = 0; l < cache.layers.size(); ++l) x.sample(label("layer", l), cache.layers[l].*field);
  };
  per_layer("strata_expert_hits_total", "Distinct experts of a window found in this device's cache slots.",
            &HitCounts::hits);
  per_layer("strata_expert_misses_total", "Distinct experts of a window not in this device's cache slots.",
            &HitCounts::misses);
  per_layer("strata_expert_hit_tokens_total", "Tokens routed to experts found in the cache.", &HitCounts::hit_tokens);
  per_layer("strata_expert_miss_tokens_total", "Tokens routed to experts not in the cache.", &HitCounts::miss_tokens);

  x.family("strata_expert_cache_slots", "gauge", "Expert slots of this device's cache.");
  x.sample("", cache.slots);
  x.family("strata_expert_windows_total", "counter", "Windows recorded by the expert cache.");
  x.sample("", cache.windows);
  x.family("strata_expert_positions_total", "counter", "Token positions of those windows.");
  x.sample("", cache.positions);
  x.family("strata_expert_swaps_total", "counter", "Adaptive swaps whose copy landed.");
  x.sample("", cache.swaps);
  x.family("strata_expert_swap_aborts_total", "counter", "Adaptive swaps whose copy failed.");
  x.sample("", cache.aborted_swaps);

  if (plans != nullptr) {
    x.family("strata_expert_planned_total", "counter",
             "Distinct experts of a window by where they were computed from.");
    for (uint32_t l = 0; l < plans->layers.size(); ++l)
      for (ExpertSource s : kExpertSources)
        x.sample(label("layer", l) + "," + label("source", source_name(s)),
                 plans->layers[l][static_cast<size_t>(s)].experts);
    x.family("strata_expert_planned_tokens_total", "counter", "(token, expert) pairs by source.");
    for (ExpertSource s : kExpertSources) x.sample(label("source", source_name(s)), plans->of(s).tokens);
    x.family("strata_expert_planned_bytes_total", "counter", "Expert bytes read by source.");
    for (ExpertSource s : kExpertSources) x.sample(label("source", source_name(s)), plans->of(s).bytes);
  }

  if (detail == MetricsDetail::LayersAndExperts) {
    x.family("strata_expert_uses_by_expert_total", "counter", "Distinct-expert uses per (layer, expert) and result.");
    for (size_t i = 0; i < cache.experts.size(); ++i) {
      const ExpertKey k = cache.keys.key(i);
      const std::string where = label("layer", k.layer) + "," + label("expert", k.expert);
      x.sample(where + "," + label("result", std::string_view("hit")), cache.experts[i].hits);
      x.sample(where + "," + label("result", std::string_view("miss")), cache.experts[i].misses);
    }
  }
  return x.take();
}

}  // namespace strata::experts
