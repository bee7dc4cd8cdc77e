// Fake plugins for the loader tests: one source, built in several variants (see CMakeLists.txt), each exercising
// one outcome of discovery and init. They implement the backend family for real (devices from an option).
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "strata/plugin_api.h"

#ifndef FAKE_NAME
#error FAKE_NAME must be defined
#endif
#ifndef FAKE_SCORE
#define FAKE_SCORE 10
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR STRATA_ABI_MAJOR
#endif
#ifndef FAKE_ABI_MINOR
#define FAKE_ABI_MINOR STRATA_ABI_MINOR
#endif

// Modes
#define FAKE_NORMAL 0
#define FAKE_INIT_FAILS 1
#define FAKE_INIT_THROWS 2       // throws inside the macro's trampoline: becomes a status
#define FAKE_QUERY_THROWS_RAW 3  // hand-written export that lets an exception cross the boundary
#define FAKE_NEWER_MINOR 4       // a descriptor with members this host does not know
#define FAKE_NO_INIT 5           // exports only the query symbol
#define FAKE_INTERFACE_THROWS 6  // get_interface throws across the boundary
#define FAKE_NEEDS_OPTION 7      // its descriptor names token=TEXT as an option a launch must give; init fails without
#define FAKE_OLD_MINOR 8         // an ABI 1.0 descriptor: no required_options member (it names token=TEXT past its end)
#ifndef FAKE_MODE
#define FAKE_MODE FAKE_NORMAL
#endif

namespace {

constexpr bool kNeedsToken = FAKE_MODE == FAKE_NEEDS_OPTION || FAKE_MODE == FAKE_OLD_MINOR;

struct FakeContext {
  uint32_t devices = 2;
  const strata_host_api* host = nullptr;
};

[[maybe_unused]] uint32_t device_count(void* ctx) { return static_cast<FakeContext*>(ctx)->devices; }

[[maybe_unused]] strata_status* device_info(void* ctx, uint32_t index, strata_device_info* out) {
  auto* c = static_cast<FakeContext*>(ctx);
  if (index >= c->devices) return c->host->status_new(STRATA_ERR_INVALID_ARGUMENT, "no such device");
  out->kind = STRATA_DEVICE_CPU;
  out->name = index == 0 ? "fake device 0" : "fake device 1";
  out->arch = "fake";
  out->memory_total = (index + 1) * 1024ull * 1024ull;
  out->memory_free = out->memory_total / 2;
  out->compute_units = 4 * (index + 1);
  return nullptr;
}

// A fake device runs no ops: it says so, and refuses any that are sent anyway.
[[maybe_unused]] uint32_t supports_op(void*, uint32_t, const strata_op*) { return 0; }

[[maybe_unused]] strata_status* compute(void* ctx, uint32_t, const strata_op*, size_t) {
  return static_cast<FakeContext*>(ctx)->host->status_new(STRATA_ERR_UNSUPPORTED, "a fake device runs no ops");
}

[[maybe_unused]] const strata_backend_v1 kBackend = {
    {sizeof(strata_backend_v1), STRATA_BACKEND_MINOR}, device_count, device_info, supports_op, compute,
    // Host memory: no device buffers (backend 1.1), no streams (1.2), no batched copies (1.8).
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr};

[[maybe_unused]] const void* get_interface(void* ctx, const char* family, uint32_t version) {
  (void)ctx;
#if FAKE_MODE == FAKE_INTERFACE_THROWS
  throw std::runtime_error("fake get_interface exploded");
#endif
  if (std::strcmp(family, STRATA_BACKEND_FAMILY) == 0 && version == STRATA_BACKEND_VERSION) return &kBackend;
  return nullptr;
}

[[maybe_unused]] void destroy(void* ctx) { delete static_cast<FakeContext*>(ctx); }

#if FAKE_MODE == FAKE_NEWER_MINOR
// What a plugin built against a later minor would carry: the members this host knows, then members added later.
struct NewerDescriptor {
  strata_plugin_descriptor base;
  const char* added_in_1_7;
  uint64_t another_new_member;
};
const NewerDescriptor kNewer = {
    {sizeof(NewerDescriptor), FAKE_ABI_MAJOR, 7, STRATA_KIND_BACKEND, FAKE_NAME, "1.7.0", "backend", FAKE_SCORE, 0,
     "newer minor", nullptr},
    "a member the host does not know",
    42};
#endif

[[maybe_unused]] const strata_plugin_descriptor kDescriptor = {
    sizeof(strata_plugin_descriptor), FAKE_ABI_MAJOR, FAKE_ABI_MINOR, STRATA_KIND_BACKEND, FAKE_NAME, "0.0.1",
    "backend", FAKE_SCORE, 0, FAKE_SCORE > 0 ? "fake: always usable" : "no fake accelerator on this machine",
    kNeedsToken ? "token=TEXT" : nullptr};

#if FAKE_MODE == FAKE_OLD_MINOR
// A plugin built against ABI 1.0 says minor 0 and a struct that ends at score_reason: the host must not read on.
const strata_plugin_descriptor kOld = [] {
  strata_plugin_descriptor d = kDescriptor;
  d.abi_minor = 0;
  d.struct_size = offsetof(strata_plugin_descriptor, required_options);
  return d;
}();
#endif

[[maybe_unused]] const strata_plugin_descriptor* query() {
#if FAKE_MODE == FAKE_NEWER_MINOR
  return &kNewer.base;
#elif FAKE_MODE == FAKE_OLD_MINOR
  return &kOld;
#else
  return &kDescriptor;
#endif
}

[[maybe_unused]] strata_status* init(const strata_host_api* host, const char* const* options, size_t n, strata_plugin_instance* out) {
#if FAKE_MODE == FAKE_INIT_FAILS
  (void)options;
  (void)n;
  (void)out;
  return host->status_new(STRATA_ERR_DEVICE, "fake device refused to start");
#elif FAKE_MODE == FAKE_INIT_THROWS
  (void)options;
  (void)n;
  (void)out;
  (void)host;
  throw std::runtime_error("fake init exploded");
#else
  auto* ctx = new FakeContext;
  ctx->host = host;
  bool have_token = false;
  for (size_t i = 0; i < n; ++i) {
    const std::string opt = options[i];
    if (opt.rfind("devices=", 0) == 0) {
      ctx->devices = static_cast<uint32_t>(std::stoul(opt.substr(8)));
    } else if (kNeedsToken && opt.rfind("token=", 0) == 0) {
      have_token = true;
    } else {
      delete ctx;
      return host->status_new(STRATA_ERR_INVALID_ARGUMENT, ("unknown option '" + opt + "' (known: devices)").c_str());
    }
  }
  if (kNeedsToken && !have_token) {
    delete ctx;
    return host->status_new(STRATA_ERR_INVALID_ARGUMENT, "option token is required");
  }
  host->log(STRATA_LOG_DEBUG, FAKE_NAME, "initialised");
  out->struct_size = sizeof(strata_plugin_instance);
  out->ctx = ctx;
  out->get_interface = get_interface;
  out->destroy = destroy;
  return nullptr;
#endif
}

}  // namespace

#if FAKE_MODE == FAKE_QUERY_THROWS_RAW
extern "C" STRATA_EXPORT const strata_plugin_descriptor* strata_plugin_query(void) {
  throw std::runtime_error("fake query exploded");
}
extern "C" STRATA_EXPORT strata_status* strata_plugin_init(const strata_host_api* host, const char* const* options,
                                                          size_t n, strata_plugin_instance* out) {
  return init(host, options, n, out);
}
#elif FAKE_MODE == FAKE_NO_INIT
extern "C" STRATA_EXPORT const strata_plugin_descriptor* strata_plugin_query(void) { return query(); }
#else
STRATA_PLUGIN_DEFINE(query, init)
#endif
