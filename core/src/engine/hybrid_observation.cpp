// What the hybrid path observes of its own work: a program's time split into the layers' host parts and the device
// alone, the balancer's per-layer samples (the device's stamps, or the host's clock) and its summary line, and the
// counts' reset.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "strata/plugin_host.hpp"

namespace strata {

void HybridMoe::reset_counts() {
  cache_->reset_stats();
  counters_ = experts::PlanCounters{};
  times_ = HybridTimes{};
  stamp_times_ = StampTimes{};
  if (peer_) peer_->reset_counts();
  if (service_) service_->reset_counts();
  if (link_) link_->reset_counts();
}

void HybridMoe::attribute_program(clock_type_point start, clock_type_point end) {
  const auto s = [](clock_type_point a, clock_type_point b) { return std::chrono::duration<double>(b - a).count(); };
  clock_type_point device_from = start;  // the device has been on its own since then
  for (uint32_t il : moe_layers_) {
    const clock_type_point last_flag = std::max(placed_at_[il], rows_at_[il]);
    times_.device_alone_s += s(device_from, seen_at_[il]);
    times_.host_part_s += s(seen_at_[il], last_flag);
    if (watch_[il].load(std::memory_order_relaxed) == 2) {
      times_.copies_landed_s += s(seen_at_[il], placed_at_[il]);
      ++times_.copy_layers;
    }
    device_from = last_flag;
    ++times_.program_layers;
  }
  times_.device_alone_s += s(device_from, end);
}

void HybridMoe::observe_program() {
  balance_samples_.clear();
  for (uint32_t il : moe_layers_) {
    strata_balance_sample s{};
    s.layer = il;
    s.n_cpu = layer_cpu_[il];
    s.n_pcie = layer_pcie_[il];
    // The host's side of the layer: from its routes seen to the pool's rows handed over, the same span the device's
    // side covers, so that max(device, host) is the layer's wait.
    s.pool_us = s.n_cpu > 0 ? 1e6 * std::chrono::duration<double>(rows_at_[il] - seen_at_[il]).count() : 0.0;
    // The GPU's side of the layer on its own clock: from its routes out to its own experts done (plan, PCIe copies
    // and the cache's and the copies' experts computed). Without stamps, the host's routes seen to copies landed.
    const int64_t out = stamping_ ? stamps_[2 * il] : 0, in = stamping_ ? stamps_[2 * il + 1] : 0;
    const int64_t done = stamping_ ? ready_stamps_[il] : 0;
    if (out > 0 && in >= out && done >= in) {
      s.gpu_us = 1e-3 * static_cast<double>(done - out);
      stamp_times_.plan_in_us += 1e-3 * static_cast<double>(in - out);
      stamp_times_.own_done_us += 1e-3 * static_cast<double>(done - out);
      ++stamp_times_.layers;
    } else {
      s.gpu_us = 1e6 * std::chrono::duration<double>(placed_at_[il] - seen_at_[il]).count();
    }
    balance_samples_.push_back(s);
  }
  throw_if_error(balancer_.table->observe(balancer_.ctx, balance_samples_.data(), balance_samples_.size()),
                 balancer_.name, "balancer.observe");
}

std::string HybridMoe::balancer_summary() const {
  if (!balancer_ || !program_ || !pool_) return {};
  const char* line = balancer_.table->describe(balancer_.ctx);
  std::string out = line != nullptr ? line : "";
  const double n = static_cast<double>(stamp_times_.layers);
  char stamps[256];
  if (stamp_times_.layers > 0) {
    std::snprintf(stamps, sizeof stamps,
                  "\ndevice stamps per MoE layer (%llu layers): plan and PCIe copies in %.1f us after the routes went "
                  "out, the device's own experts done after %.1f us",
                  static_cast<unsigned long long>(stamp_times_.layers), stamp_times_.plan_in_us / n,
                  stamp_times_.own_done_us / n);
  } else {
    std::snprintf(stamps, sizeof stamps, "\nno device stamps yet (the GPU's samples use the host's clock)");
  }
  return out + stamps;
}

}  // namespace strata
