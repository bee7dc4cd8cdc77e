// The host's API table for plugins, and statuses: made here (status_new), read and freed here (take_status).
#include <cstring>
#include <string>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"

struct strata_status {
  strata_status_code code;
  std::string message;
};

namespace strata {
namespace {

void host_log(strata_log_level level, const char* plugin_name, const char* message) {
  std::string line = "[";
  line += plugin_name != nullptr ? plugin_name : "plugin";
  line += "] ";
  line += message != nullptr ? message : "";
  switch (level) {
    case STRATA_LOG_DEBUG: log::debug(line); break;
    case STRATA_LOG_INFO: log::info(line); break;
    case STRATA_LOG_WARN: log::warn(line); break;
    default: log::error(line); break;
  }
}

strata_status* host_status_new(strata_status_code code, const char* message) {
  try {
    return new strata_status{code, message != nullptr ? message : ""};
  } catch (...) {
    return nullptr;  // out of memory while reporting an error: nothing better to do across a C boundary
  }
}

const char* host_version() { return STRATA_VERSION; }

}  // namespace

const char* status_code_name(strata_status_code code) {
  switch (code) {
    case STRATA_OK: return "ok";
    case STRATA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case STRATA_ERR_UNSUPPORTED: return "unsupported";
    case STRATA_ERR_OUT_OF_MEMORY: return "out of memory";
    case STRATA_ERR_DEVICE: return "device error";
    case STRATA_ERR_INTERNAL: return "internal error";
    case STRATA_ERR_UNAVAILABLE: return "unavailable";
  }
  return "unknown status code";
}

const strata_host_api* host_api() {
  static const strata_host_api api = {
      sizeof(strata_host_api), STRATA_ABI_MAJOR, STRATA_ABI_MINOR, 0, host_log, host_status_new, host_version,
  };
  return &api;
}

std::pair<strata_status_code, std::string> take_status(strata_status* status) {
  if (status == nullptr) return {STRATA_OK, {}};
  std::pair<strata_status_code, std::string> out{status->code, std::move(status->message)};
  delete status;
  return out;
}

void throw_if_error(strata_status* status, const std::string& plugin, const std::string& what) {
  if (status == nullptr) return;
  auto [code, message] = take_status(status);
  throw Error("plugin '" + plugin + "': " + what + " failed (" + status_code_name(code) + "): " + message);
}

}  // namespace strata
