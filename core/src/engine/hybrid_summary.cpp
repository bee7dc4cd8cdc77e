// The decode summary's hybrid block: the set-up line, hits and experts by source, fast and simple mode's times per
// window and per MoE layer, the prompt path's chunks, the host placement, the balancer, the peer card and the link,
// the CPU pool's own roofline, and the decode roofline.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "strata/experts/expert_report.hpp"
#include "strata/experts/pool_roofline.hpp"

namespace strata {

std::string HybridMoe::summary(double decode_tokens_per_s) const {
  const HybridTimes& t = times_;
  const experts::PlanCounters& plans = counters_;
  std::string out = "hybrid set-up: " + description_ + "\n" +
                    experts::render_expert_summary(cache_->stats(), &plans);
  const double windows = static_cast<double>(std::max<uint64_t>(plans.windows, 1));
  char line[512];
  const auto per = [](double s, uint64_t n) { return n > 0 ? 1e3 * s / static_cast<double>(n) : 0.0; };
  if (t.programs > 0) {
    std::snprintf(line, sizeof line, "fast mode: %llu windows as one device program, %.2f ms each\n",
                  static_cast<unsigned long long>(t.programs), per(t.program_s, t.programs));
    out += line;
    // Where a program's time goes, layer by layer (host clock): the device on its own, then the host's part of the
    // layer, from the routes seen to the last flag raised (the placed flag after the PCIe copies, the pool's rows).
    std::snprintf(line, sizeof line,
                  "fast mode per MoE layer: the device alone %.3f ms, the host's part %.3f ms (PCIe copies landed after "
                  "%.3f ms in %.0f%% of layers)\n",
                  per(t.device_alone_s, t.program_layers), per(t.host_part_s, t.program_layers),
                  per(t.copies_landed_s, t.copy_layers),
                  t.program_layers > 0 ? 100.0 * static_cast<double>(t.copy_layers) / static_cast<double>(t.program_layers) : 0.0);
    out += line;
  }
  // Simple mode's stages, when windows ran in it (prompts; every window with runtime.graphs off).
  if (t.stage_s > 0) {
    std::snprintf(line, sizeof line, "simple mode: MoE stages on the device %.2f ms a window, %.3f ms a MoE layer\n",
                  per(t.stage_s, plans.windows - t.programs), per(t.stage_s, t.layers - t.program_layers));
    out += line;
  }
  if (t.chunked_layers > 0) {
    std::snprintf(line, sizeof line,
                  "prompt path: %llu layers read their PCIe experts in chunks, %.1f a layer, computed as they landed\n",
                  static_cast<unsigned long long>(t.chunked_layers),
                  static_cast<double>(t.chunks) / static_cast<double>(t.chunked_layers));
    out += line;
  }
  std::snprintf(line, sizeof line,
                "host placement %.2f ms a window, %.3f ms a MoE layer (planning %.3f; the pool %.3f ms a call, %llu calls "
                "in %.0f%% of layers); %llu experts read over PCIe; %llu swaps; pcie_frac %.3f\n",
                1e3 * t.place_s / windows, per(t.place_s, t.layers), per(t.plan_s, t.layers), per(t.pool_s, t.pool_layers),
                static_cast<unsigned long long>(t.pool_layers),
                t.layers > 0 ? 100.0 * static_cast<double>(t.pool_layers) / static_cast<double>(t.layers) : 0.0,
                static_cast<unsigned long long>(t.copies), static_cast<unsigned long long>(t.swaps), pcie_frac());
  out += line;
  if (const std::string b = balancer_summary(); !b.empty()) out += b + "\n";
  if (const PeerTier* peer = peer_.get()) {
    // How busy the peer card is: its MOE_ROUTED ops on its own clock, against the windows' time.
    const PeerTimes& p = peer->times();
    std::snprintf(line, sizeof line,
                  "peer card: %llu experts (%llu rows) computed in %llu layers, %.2f experts a token; busy %.3f ms a "
                  "window, %.1f%% of the windows' time; %.3f ms a layer from hand-off to rows back\n",
                  static_cast<unsigned long long>(p.experts), static_cast<unsigned long long>(p.pairs),
                  static_cast<unsigned long long>(p.layers),
                  plans.positions > 0 ? static_cast<double>(p.experts) / static_cast<double>(plans.positions) : 0.0,
                  1e3 * p.busy_s / windows, t.window_s > 0 ? 100.0 * p.busy_s / t.window_s : 0.0,
                  per(p.round_trip_s, p.layers));
    out += line;
  }
  if (const LinkTier* link = link_) {
    const LinkCounts& c = link->counts();
    std::snprintf(line, sizeof line,
                  "peer link: asked the other engine in %llu layers: %llu experts (%llu rows) computed there, %.3f ms a "
                  "layer from hand-off to rows back; %llu experts late (computed here from RAM), %llu requests not "
                  "answered in time\n",
                  static_cast<unsigned long long>(c.requests), static_cast<unsigned long long>(c.experts),
                  static_cast<unsigned long long>(c.pairs), per(c.wait_s, c.requests),
                  static_cast<unsigned long long>(c.late), static_cast<unsigned long long>(c.timeouts));
    out += line;
  }
  if (const LinkService* service = service_.get()) {
    const ServiceCounts c = service->counts();
    std::snprintf(line, sizeof line,
                  "peer link service (%s): %llu requests of the other engine answered, %llu experts computed for it, "
                  "%llu no longer held; busy %.3f ms a request\n",
                  service->serving() ? "serving" : "not serving", static_cast<unsigned long long>(c.requests),
                  static_cast<unsigned long long>(c.experts), static_cast<unsigned long long>(c.not_held),
                  per(c.busy_s, c.requests));
    out += line;
  }
  // The pool's own roofline: its reads of the experts' weights against the host's read rate.
  if (const std::string pool = experts::render_pool_roofline(t.pool, rates_.cpu_read); !pool.empty()) {
    out += pool + "\n";
  }
  // The roofline: weights from VRAM at the device's rate; misses at the host's read rate plus the link's.
  const Rates& r = rates_;
  using experts::ExpertSource;
  const double vram = static_cast<double>(dense_token_bytes_) + plans.bytes_per_token(ExpertSource::Hit);
  const double missed = plans.bytes_per_token(ExpertSource::Pcie) + plans.bytes_per_token(ExpertSource::Cpu);
  if (r.hbm > 0 && r.h2d + r.pool_rate() > 0 && plans.positions > 0) {
    const double seconds = vram / r.hbm + missed / (r.h2d + r.pool_rate());
    std::snprintf(line, sizeof line,
                  "roofline: %.1f MiB a token from VRAM at %.0f GB/s + %.1f MiB missed at %.1f + %.1f GB/s (the pool: "
                  "host read or its measured rate, the slower + pinned link) = %.3f ms: %.1f tokens/s at most\n",
                  vram / 1048576.0, r.hbm / 1e9, missed / 1048576.0, r.pool_rate() / 1e9, r.h2d / 1e9, 1e3 * seconds,
                  1.0 / seconds);
    out += line;
    if (decode_tokens_per_s > 0) {
      std::snprintf(line, sizeof line, "decode %.2f tokens/s = %.1f%% of the roofline\n", decode_tokens_per_s,
                    100.0 * decode_tokens_per_s * seconds);
      out += line;
    }
  }
  return out;
}

}  // namespace strata
