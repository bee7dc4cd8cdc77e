// The expert block of the decode summary.
#include <cstdio>
#include <string>

#include "human_bytes.hpp"
#include "strata/experts/expert_report.hpp"

namespace strata::experts {

namespace {

std::string fixed(double v, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

std::string cell(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

const char* source_place(ExpertSource source) {
  switch (source) {
    case ExpertSource::Hit: return "from VRAM";
    case ExpertSource::Peer: return "from the peer";
    case ExpertSource::Pcie: return "over PCIe";
    case ExpertSource::Cpu: return "from RAM";
  }
  return "";
}

}  // namespace

std::string render_expert_summary(const ExpertStats& cache, const PlanCounters* plans) {
  const HitCounts t = cache.total();
  std::string out = "expert cache: " + std::to_string(cache.slots) + " slots, " + fixed(100.0 * t.hit_rate(), 1) +
                    "% hits (" + std::to_string(t.hits) + " of " + std::to_string(t.uses()) + " expert uses";
  const uint64_t tokens = t.hit_tokens + t.miss_tokens;
  if (tokens > 0)
    out +=
        ", " + fixed(100.0 * static_cast<double>(t.hit_tokens) / static_cast<double>(tokens), 1) + "% of their tokens";
  out += ") over " + std::to_string(cache.windows) + " windows, " + std::to_string(cache.positions) + " positions; " +
         std::to_string(cache.swaps) + " swaps, " + std::to_string(cache.aborted_swaps) + " aborted\n";

  if (plans != nullptr) {
    out += "per token:";
    for (ExpertSource s : kExpertSources)
      out += std::string(s == ExpertSource::Hit ? " " : ", ") + std::string(source_name(s)) + " " +
             fixed(plans->experts_per_token(s), 2);
    out += " experts;";
    for (ExpertSource s : kExpertSources)
      out += std::string(s == ExpertSource::Hit ? " " : ", ") + human_bytes(plans->bytes_per_token(s)) + " " +
             source_place(s);
    out += "\n";
  }

  out += "layer   hits  misses   hit%";
  if (plans != nullptr) out += "   peer   pcie    cpu";
  out += "\n";
  for (uint32_t l = 0; l < cache.layers.size(); ++l) {
    const HitCounts& c = cache.layers[l];
    const bool planned = plans != nullptr && l < plans->layers.size();
    if (c.uses() == 0 && !planned) continue;
    out += cell(std::to_string(l), 5) + cell(std::to_string(c.hits), 7) + cell(std::to_string(c.misses), 8) +
           cell(fixed(100.0 * c.hit_rate(), 1), 7);
    if (plans != nullptr) {
      for (ExpertSource s : {ExpertSource::Peer, ExpertSource::Pcie, ExpertSource::Cpu})
        out += cell(std::to_string(planned ? plans->layers[l][static_cast<size_t>(s)].experts : 0), 7);
    }
    out += "\n";
  }
  return out;
}

}  // namespace strata::experts
