// A plugin's descriptor (plugin_api.h) with this build's ABI and struct size filled in, so each plugin states only
// what is its own: kind, name, version, families, score and why, and the options a launch must give it (if any).
#pragma once

#include "strata/plugin_api.h"

namespace strata {

inline strata_plugin_descriptor plugin_descriptor(strata_plugin_kind kind, const char* name, const char* version,
                                                  const char* families, uint32_t score, const char* score_reason,
                                                  const char* required_options = nullptr) {
  strata_plugin_descriptor d{};
  d.struct_size = sizeof d;
  d.abi_major = STRATA_ABI_MAJOR;
  d.abi_minor = STRATA_ABI_MINOR;
  d.kind = kind;
  d.name = name;
  d.version = version;
  d.families = families;
  d.score = score;
  d.score_reason = score_reason;
  d.required_options = required_options;
  return d;
}

}  // namespace strata
