// Routing profiles of an engine: which experts its tokens were routed to, as an experts::ExpertProfile (the file
// `strata profile` and experts.record write, and experts.profile reads), and experts.profile's `auto`.
#pragma once

#include <optional>
#include <string>

#include "strata/experts/expert_profile.hpp"

namespace strata {

class Engine;
class Model;

// The identity a profile of `model` carries: the GGUF header's hash, its layers and the most experts a layer has
// (the hybrid path's expert cache checks the same).
experts::ModelIdentity profile_identity(const Model& model);
// The model's name, absolute path and file size, for a profile's reader.
experts::ProfileInfo model_profile_info(const Model& model);

// The engine's routing counts since its start (or its last reset_expert_counts) as a profile of its model, with
// `info`. Throws strata::Error naming the fix when the engine does not see its routes (every expert on the GPU,
// where the choices never leave it; a dense model).
experts::ExpertProfile engine_profile(Engine& engine, experts::ProfileInfo info);

// experts.profile's value for `model`: unset stays unset; `auto` becomes the profile stored beside the model
// (experts::default_profile_path) when that file exists, or unset (a log line says which); a file is loaded once
// here, so that a bad one (not JSON, another model's shape, rows of the wrong length) stops the start with its
// message even on a backend without an expert cache. `used` says whether an expert cache will read it (for the log).
std::optional<std::string> resolve_profile(const std::optional<std::string>& setting, const Model& model, bool used);

}  // namespace strata
