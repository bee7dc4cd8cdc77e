// peerlink: the `link` family. Two engine processes share one mapped file (link_file.hpp): each publishes which
// experts its card holds and asks the other for rows of the experts only the other holds. Options: file (required),
// role (0 or 1, required), deadline_ms (50), stale_ms (1000), heartbeat_ms (10). Exceptions never cross: every entry
// catches and returns a status, or 0.
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "link_file.hpp"
#include "strata/plugin_api.h"
#include "strata/plugin_descriptor.hpp"
#include "strata/plugin_options.hpp"

namespace strata::peerlink {
namespace {

constexpr const char* kName = "peerlink";

struct Instance {
  const strata_host_api* host = nullptr;
  LinkSettings settings;
  std::mutex open_mutex;                 // open and destroy against each other
  std::unique_ptr<LinkFile> owned;       // set once by open
  std::atomic<LinkFile*> link{nullptr};  // what every other entry reads (describe may come from another thread)
  std::mutex describe_mutex;
  std::string description;
};

Instance* of(void* ctx) { return static_cast<Instance*>(ctx); }

strata_status_code code_of(LinkError::Kind kind) {
  switch (kind) {
    case LinkError::Kind::InvalidArgument: return STRATA_ERR_INVALID_ARGUMENT;
    case LinkError::Kind::OutOfMemory: return STRATA_ERR_OUT_OF_MEMORY;
    case LinkError::Kind::Unavailable: break;
  }
  return STRATA_ERR_UNAVAILABLE;
}

// Runs `body` and turns what it throws into a status (messages are passed as they are: no allocation on the way).
template <class Body>
strata_status* guarded(Instance* inst, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const LinkError& e) {
    return inst->host->status_new(code_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return inst->host->status_new(STRATA_ERR_OUT_OF_MEMORY, "peerlink: out of memory");
  } catch (const std::exception& e) {
    return inst->host->status_new(STRATA_ERR_INTERNAL, e.what());
  } catch (...) {
    return inst->host->status_new(STRATA_ERR_INTERNAL, "peerlink: unknown exception");
  }
}

LinkFile& open_link(Instance* inst) {
  LinkFile* link = inst->link.load(std::memory_order_acquire);
  if (link == nullptr) throw LinkError(LinkError::Kind::Unavailable, "peerlink: the link is not open: call open first");
  return *link;
}

strata_status* open(void* ctx, const strata_link_geometry* geometry) noexcept {
  Instance* inst = of(ctx);
  return guarded(inst, [&] {
    if (geometry == nullptr) throw LinkError(LinkError::Kind::InvalidArgument, "peerlink: open: geometry is NULL");
    const size_t fingerprint_length = strnlen(geometry->fingerprint, sizeof geometry->fingerprint);
    if (fingerprint_length == sizeof geometry->fingerprint) {
      throw LinkError(LinkError::Kind::InvalidArgument,
                      "peerlink: open: the geometry's fingerprint has no NUL within its 64 bytes");
    }
    std::lock_guard<std::mutex> lock(inst->open_mutex);
    if (inst->owned != nullptr) {
      throw LinkError(LinkError::Kind::InvalidArgument, "peerlink: open: the link is open already");
    }
    const LinkGeometry g{geometry->n_layer, geometry->n_expert, geometry->n_embd, geometry->k_max,
                         geometry->max_tokens, std::string(geometry->fingerprint, fingerprint_length)};
    const strata_host_api* host = inst->host;
    inst->owned = std::make_unique<LinkFile>(inst->settings, g, [host](const std::string& line) {
      host->log(STRATA_LOG_INFO, kName, line.c_str());
    });
    inst->link.store(inst->owned.get(), std::memory_order_release);
  });
}

strata_status* set_serving(void* ctx, uint32_t on) noexcept {
  Instance* inst = of(ctx);
  return guarded(inst, [&] { open_link(inst).set_serving(on != 0); });
}

strata_status* publish(void* ctx, const uint8_t* bits) noexcept {
  Instance* inst = of(ctx);
  return guarded(inst, [&] { open_link(inst).publish(bits); });
}

uint32_t peer_ready(void* ctx) noexcept {
  try {
    const LinkFile* link = of(ctx)->link.load(std::memory_order_acquire);
    return link != nullptr && link->peer_ready() ? 1u : 0u;
  } catch (...) {
    return 0;
  }
}

uint32_t peer_residency(void* ctx, uint8_t* bits) noexcept {
  try {
    const LinkFile* link = of(ctx)->link.load(std::memory_order_acquire);
    return link != nullptr && link->peer_residency(bits) ? 1u : 0u;
  } catch (...) {
    return 0;
  }
}

void to_request(const RequestView& v, strata_link_request* out) {
  out->layer = v.layer;
  out->n_tok = v.n_tok;
  out->k = v.k;
  out->n_experts = v.n_experts;
  out->experts = v.experts;
  out->x = v.x;
  out->ids = v.ids;
  out->weights = v.weights;
  out->rows = v.rows;
  out->served = v.served;
}

strata_status* outbox(void* ctx, strata_link_request* out) noexcept {
  Instance* inst = of(ctx);
  return guarded(inst, [&] {
    if (out == nullptr) throw LinkError(LinkError::Kind::InvalidArgument, "peerlink: outbox: out is NULL");
    to_request(open_link(inst).outbox(), out);
  });
}

strata_status* send(void* ctx, uint32_t layer, uint32_t n_tok, uint32_t k, uint32_t n_experts) noexcept {
  Instance* inst = of(ctx);
  return guarded(inst, [&] { open_link(inst).send(layer, n_tok, k, n_experts); });
}

uint32_t await_answer(void* ctx) noexcept {
  try {
    LinkFile* link = of(ctx)->link.load(std::memory_order_acquire);
    return link != nullptr && link->await_answer() ? 1u : 0u;
  } catch (...) {
    return 0;
  }
}

uint32_t next_request(void* ctx, uint32_t wait_us, strata_link_request* out) noexcept {
  try {
    LinkFile* link = of(ctx)->link.load(std::memory_order_acquire);
    RequestView v;
    if (link == nullptr || out == nullptr || !link->next_request(wait_us, &v)) return 0;
    to_request(v, out);
    return 1;
  } catch (...) {
    return 0;
  }
}

void answer(void* ctx) noexcept {
  try {
    LinkFile* link = of(ctx)->link.load(std::memory_order_acquire);
    if (link != nullptr) link->answer();
  } catch (...) {
  }
}

const char* describe(void* ctx) noexcept {
  Instance* inst = of(ctx);
  std::lock_guard<std::mutex> lock(inst->describe_mutex);
  try {
    const LinkFile* link = inst->link.load(std::memory_order_acquire);
    inst->description = link != nullptr ? link->describe()
                                        : "peerlink: " + inst->settings.path + " role " +
                                              std::to_string(inst->settings.role) + ", not open";
  } catch (...) {
    inst->description = "peerlink: (no description: out of memory)";
  }
  return inst->description.c_str();
}

const strata_link_v1 kLink = {{sizeof(strata_link_v1), STRATA_LINK_MINOR},
                              open,
                              set_serving,
                              publish,
                              peer_ready,
                              peer_residency,
                              outbox,
                              send,
                              await_answer,
                              next_request,
                              answer,
                              describe};

const void* get_interface(void*, const char* family, uint32_t version) {
  if (family == nullptr) return nullptr;
  if (std::string_view(family) == STRATA_LINK_FAMILY && version == STRATA_LINK_VERSION) return &kLink;
  return nullptr;
}

void destroy(void* ctx) {
  Instance* inst = of(ctx);
  {
    std::lock_guard<std::mutex> lock(inst->open_mutex);
    inst->link.store(nullptr, std::memory_order_release);
    inst->owned.reset();  // leaves the role, joins the heartbeat, unmaps
  }
  delete inst;
}

const strata_plugin_descriptor* query() {
  static const strata_plugin_descriptor d =
      plugin_descriptor(STRATA_KIND_FEATURE, kName, "0.1.0", "link", 1, "POSIX shared memory", "file=PATH,role=0|1");
  return &d;
}

// ---- options ------------------------------------------------------------------------------------------------

struct WholeOption {
  const char* key;
  uint32_t lo, hi;
  uint32_t LinkSettings::*field;
  const char* unit;
};

constexpr WholeOption kWholeOptions[] = {
    {"role", 0, 1, &LinkSettings::role, "0 or 1 (one engine takes role 0, the other role 1)"},
    {"deadline_ms", 1, 600000, &LinkSettings::deadline_ms, "a whole number of milliseconds from 1 to 600000"},
    {"stale_ms", 1, 3600000, &LinkSettings::stale_ms, "a whole number of milliseconds from 1 to 3600000"},
    {"heartbeat_ms", 1, 60000, &LinkSettings::heartbeat_ms, "a whole number of milliseconds from 1 to 60000"},
};

strata_status* invalid(const strata_host_api* host, const std::string& message) {
  return host->status_new(STRATA_ERR_INVALID_ARGUMENT, message.c_str());
}

strata_status* init(const strata_host_api* host, const char* const* options, size_t n, strata_plugin_instance* out) {
  LinkSettings s;
  bool have_file = false, have_role = false;
  for (size_t i = 0; i < n; ++i) {
    const auto option = split_option(options[i]);
    const std::string key(option.key), value(option.value);
    if (key == "file") {
      if (value.empty()) {
        return invalid(host, "peerlink: option file is empty: give the link file's path, e.g. file=/dev/shm/strata.link");
      }
      s.path = value;
      have_file = true;
      continue;
    }
    const WholeOption* known = nullptr;
    for (const WholeOption& w : kWholeOptions) known = key == w.key ? &w : known;
    if (known == nullptr) {
      return invalid(host, "peerlink: unknown option '" + key +
                               "' (known: file, role, deadline_ms, stale_ms, heartbeat_ms)");
    }
    if (!parse_whole_option(value, known->lo, known->hi, &(s.*known->field))) {
      return invalid(host, "peerlink: option " + key + "=" + value + ": expected " + known->unit);
    }
    have_role = have_role || key == "role";
  }
  if (!have_file) {
    return invalid(host, "peerlink: option file is required: the path of the link file both engines name, e.g. "
                         "file=/dev/shm/strata.link");
  }
  if (!have_role) return invalid(host, "peerlink: option role is required: 0 for one engine, 1 for the other");
  if (s.stale_ms < 2 * s.heartbeat_ms) {
    return invalid(host, "peerlink: stale_ms=" + std::to_string(s.stale_ms) + " is below twice heartbeat_ms=" +
                             std::to_string(s.heartbeat_ms) +
                             ": a live engine would look stalled between heartbeats; raise stale_ms or lower "
                             "heartbeat_ms");
  }
  auto inst = std::make_unique<Instance>();
  inst->host = host;
  inst->settings = s;
  out->struct_size = sizeof *out;
  out->reserved0 = 0;
  out->ctx = inst.release();
  out->get_interface = get_interface;
  out->destroy = destroy;
  return nullptr;
}

}  // namespace
}  // namespace strata::peerlink

STRATA_PLUGIN_DEFINE(strata::peerlink::query, strata::peerlink::init)
