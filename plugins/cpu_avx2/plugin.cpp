// The plugin's entry points: the descriptor (score 0 without AVX2+FMA+F16C), init (options), and the backend
// and expert_pool family tables. Exceptions never cross: every entry catches and returns a status.
#include <memory>
#include <new>
#include <string>

#include "context.hpp"
#include "cpu_topology.hpp"
#include "moe.hpp"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"
#include "strata/plugin_descriptor.hpp"

namespace strata::cpu {
namespace {

constexpr const char* kName = "cpu_avx2";

strata_plugin_descriptor make_descriptor() {
  const IsaFeatures f = detect_isa();
  // The host picks the best score for `auto`: GPU backends score higher; AVX-512 ranks above AVX2 only among CPUs.
  const bool vnni = f.avx512() && f.avx512vnni;
  return plugin_descriptor(STRATA_KIND_BACKEND, kName, "0.1.0", "backend,expert_pool",
                           !f.usable() ? 0 : (vnni ? 20 : 10),
                           !f.usable() ? "no AVX2/FMA/F16C" : (vnni ? "AVX2+FMA+F16C, AVX-512 VNNI" : "AVX2+FMA+F16C"));
}

// Runs `body` and turns an escaping exception into a status of the context's host.
template <class Body>
strata_status* guarded(Context* ctx, Body body) noexcept {
  try {
    return body();
  } catch (const OpFailure& e) {
    return ctx->error(e.code, e.what());
  } catch (const std::bad_alloc&) {
    return ctx->error(STRATA_ERR_OUT_OF_MEMORY, "cpu_avx2: out of memory for scratch buffers");
  } catch (const std::exception& e) {
    return ctx->error(STRATA_ERR_INTERNAL, std::string("cpu_avx2: ") + e.what());
  } catch (...) {
    return ctx->error(STRATA_ERR_INTERNAL, "cpu_avx2: unknown exception");
  }
}

uint32_t device_count(void*) { return 1; }

strata_status* device_info(void* c, uint32_t index, strata_device_info* out) {
  auto* ctx = static_cast<Context*>(c);
  return guarded(ctx, [&]() -> strata_status* {
    if (index != 0) return ctx->error(STRATA_ERR_INVALID_ARGUMENT, "cpu_avx2 has one device (0), not " + std::to_string(index));
    out->struct_size = sizeof *out;
    out->kind = STRATA_DEVICE_CPU;
    out->name = ctx->device_name().c_str();
    out->arch = path_arch(ctx->path(), ctx->gathers());
    out->memory_total = memory_total_bytes();
    out->memory_free = memory_available_bytes();
    out->compute_units = ctx->pool().parts();
    out->reserved0 = 0;
    return nullptr;
  });
}

uint32_t supports_op(void* c, uint32_t device, const strata_op* op) {
  try {
    return device == 0 && op != nullptr && !check_op(*static_cast<Context*>(c), *op) ? 1u : 0u;
  } catch (...) {
    return 0;
  }
}

strata_status* compute(void* c, uint32_t device, const strata_op* ops, size_t n_ops) {
  auto* ctx = static_cast<Context*>(c);
  return guarded(ctx, [&]() -> strata_status* {
    if (device != 0) return ctx->error(STRATA_ERR_INVALID_ARGUMENT, "cpu_avx2 has one device (0), not " + std::to_string(device));
    std::lock_guard<std::mutex> lock(ctx->mutex());
    if (auto why = format::check_op_array(ops, n_ops)) return ctx->error(STRATA_ERR_INVALID_ARGUMENT, "cpu_avx2: " + *why);
    for (size_t i = 0; i < n_ops; ++i) {
      if (auto why = check_op(*ctx, ops[i])) {
        return ctx->error(STRATA_ERR_UNSUPPORTED, "cpu_avx2: op " + std::to_string(i) + " (kind " +
                                                      std::to_string(ops[i].kind) + "): " + *why);
      }
      run_op(*ctx, ops[i]);
    }
    return nullptr;
  });
}

uint32_t worker_count(void* c) { return static_cast<Context*>(c)->pool().parts(); }

strata_status* pool_compute(void* c, const strata_moe_op* moe, volatile uint32_t* done_flag, uint32_t done_value) {
  auto* ctx = static_cast<Context*>(c);
  return guarded(ctx, [&]() -> strata_status* {
    if (moe == nullptr) return ctx->error(STRATA_ERR_INVALID_ARGUMENT, "expert_pool.compute: moe is NULL");
    std::lock_guard<std::mutex> lock(ctx->mutex());
    if (auto why = check_moe_op(*ctx, *moe, true)) {
      return ctx->error(STRATA_ERR_INVALID_ARGUMENT, "expert_pool.compute: " + *why);
    }
    compute_expert_rows(*ctx, *moe, moe->rows);
    if (done_flag != nullptr) __atomic_store_n(const_cast<uint32_t*>(done_flag), done_value, __ATOMIC_RELEASE);
    return nullptr;
  });
}

strata_status* set_worker_limit(void* c, uint32_t n) {
  auto* ctx = static_cast<Context*>(c);
  return guarded(ctx, [&]() -> strata_status* {
    std::lock_guard<std::mutex> lock(ctx->mutex());  // between computations
    ctx->pool().set_active_parts(n == 0 ? ctx->pool().max_parts() : n);
    return nullptr;
  });
}

const strata_backend_v1 kBackend = {
    {sizeof(strata_backend_v1), STRATA_BACKEND_MINOR}, device_count, device_info, supports_op, compute,
    // Host memory: no device buffers (backend 1.1), no streams (1.2), no batched copies (1.8).
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr};
const char* pool_describe(void* c) { return static_cast<Context*>(c)->setup_line().c_str(); }

const strata_expert_pool_v1 kExpertPool = {
    {sizeof(strata_expert_pool_v1), STRATA_EXPERT_POOL_MINOR}, worker_count, pool_compute, set_worker_limit,
    pool_describe};

const void* get_interface(void*, const char* family, uint32_t version) {
  if (family == nullptr) return nullptr;
  const std::string f = family;
  if (f == STRATA_BACKEND_FAMILY && version == STRATA_BACKEND_VERSION) return &kBackend;
  if (f == STRATA_EXPERT_POOL_FAMILY && version == STRATA_EXPERT_POOL_VERSION) return &kExpertPool;
  return nullptr;
}

void destroy(void* c) { delete static_cast<Context*>(c); }

const strata_plugin_descriptor* query() {
  static const strata_plugin_descriptor d = make_descriptor();
  return &d;
}

strata_status* init(const strata_host_api* host, const char* const* options, size_t n, strata_plugin_instance* out) {
  if (!detect_isa().usable()) {
    return host->status_new(STRATA_ERR_UNSUPPORTED, "cpu_avx2: this CPU lacks AVX2, FMA or F16C");
  }
  Options opts;
  std::string error;
  if (!parse_options(options, n, read_topology(affinity_cpus()), &opts, &error)) {
    return host->status_new(STRATA_ERR_INVALID_ARGUMENT, ("cpu_avx2: " + error).c_str());
  }
  auto ctx = std::make_unique<Context>(host, opts);
  // The set-up line: how many threads compute, and why that many (also the expert pool's describe()).
  ctx->set_setup_line(opts.why + (opts.host_worker ? " + the calling thread" : "") + (opts.pin ? ", pinned" : ""));
  ctx->log(STRATA_LOG_INFO, std::string(path_arch(ctx->path(), ctx->gathers())) + ", " + ctx->setup_line());
  out->struct_size = sizeof *out;
  out->reserved0 = 0;
  out->ctx = ctx.release();
  out->get_interface = get_interface;
  out->destroy = destroy;
  return nullptr;
}

}  // namespace
}  // namespace strata::cpu

STRATA_PLUGIN_DEFINE(strata::cpu::query, strata::cpu::init)
