// pcie_balance: the `balancer` family. After each window the host hands it per-layer samples (the pool's time, the
// time until the layer's PCIe experts were in place, and how many experts each side had); before each layer's plan
// it says how many misses go over PCIe (balance_model.hpp). Options: memory (layers the fits remember, default
// 200), explore_every (default 64; 0 never explores). Exceptions never cross: every entry catches.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "balance_model.hpp"
#include "strata/plugin_api.h"
#include "strata/plugin_descriptor.hpp"
#include "strata/plugin_options.hpp"

namespace strata::balance {
namespace {

constexpr const char* kName = "pcie_balance";

struct Instance {
  const strata_host_api* host = nullptr;
  std::mutex mutex;  // observe runs after a window, choose during one: the host may call them from two threads
  BalanceModel model;
  std::string description;
  explicit Instance(const strata_host_api* h, BalanceSettings s) : host(h), model(s) {}
};

strata_status* observe(void* c, const strata_balance_sample* samples, size_t n) {
  auto* inst = static_cast<Instance*>(c);
  if (samples == nullptr && n > 0) return inst->host->status_new(STRATA_ERR_INVALID_ARGUMENT, "pcie_balance: observe: samples is NULL");
  try {
    std::lock_guard<std::mutex> lock(inst->mutex);
    for (size_t i = 0; i < n; ++i) {
      (void)inst->model.observe({samples[i].n_cpu, samples[i].n_pcie, samples[i].pool_us, samples[i].gpu_us});
    }
  } catch (const std::exception& e) {
    return inst->host->status_new(STRATA_ERR_INTERNAL, (std::string("pcie_balance: ") + e.what()).c_str());
  }
  return nullptr;
}

uint32_t choose(void* c, uint32_t /*layer*/, uint32_t n_miss) {
  auto* inst = static_cast<Instance*>(c);
  std::lock_guard<std::mutex> lock(inst->mutex);
  return inst->model.choose(n_miss);
}

const char* describe(void* c) {
  auto* inst = static_cast<Instance*>(c);
  std::lock_guard<std::mutex> lock(inst->mutex);
  try {
    inst->description = inst->model.describe();
  } catch (...) {
    inst->description = "pcie_balance: (no description: out of memory)";
  }
  return inst->description.c_str();
}

const strata_balancer_v1 kBalancer = {{sizeof(strata_balancer_v1), STRATA_BALANCER_MINOR}, observe, choose, describe};

const void* get_interface(void*, const char* family, uint32_t version) {
  if (family == nullptr) return nullptr;
  if (std::string_view(family) == STRATA_BALANCER_FAMILY && version == STRATA_BALANCER_VERSION) return &kBalancer;
  return nullptr;
}

void destroy(void* c) { delete static_cast<Instance*>(c); }

const strata_plugin_descriptor* query() {
  static const strata_plugin_descriptor d =
      plugin_descriptor(STRATA_KIND_FEATURE, kName, "0.1.0", "balancer", 1, "portable C++");
  return &d;
}

strata_status* init(const strata_host_api* host, const char* const* options, size_t n, strata_plugin_instance* out) {
  BalanceSettings s;
  for (size_t i = 0; i < n; ++i) {
    const auto [key, value] = split_option(options[i]);
    uint32_t v = 0;
    if (key == "memory") {
      if (!parse_whole_option(value, 2, 1000000, &v)) {
        return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                                ("pcie_balance: option memory=" + std::string(value) + ": expected a whole number of layers from 2 to 1000000").c_str());
      }
      s.memory = v;
    } else if (key == "explore_every") {
      if (!parse_whole_option(value, 0, 1000000, &v)) {
        return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                                ("pcie_balance: option explore_every=" + std::string(value) + ": expected a whole number of layers from 0 (never) to 1000000").c_str());
      }
      s.explore_every = v;
    } else {
      return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                              ("pcie_balance: unknown option '" + std::string(key) + "' (known: memory, explore_every)").c_str());
    }
  }
  try {
    auto inst = std::make_unique<Instance>(host, s);
    out->struct_size = sizeof *out;
    out->reserved0 = 0;
    out->ctx = inst.release();
    out->get_interface = get_interface;
    out->destroy = destroy;
  } catch (const std::exception& e) {
    return host->status_new(STRATA_ERR_OUT_OF_MEMORY, (std::string("pcie_balance: ") + e.what()).c_str());
  }
  return nullptr;
}

}  // namespace
}  // namespace strata::balance

STRATA_PLUGIN_DEFINE(strata::balance::query, strata::balance::init)
