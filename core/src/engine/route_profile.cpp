#include "strata/route_profile.hpp"

#include <filesystem>

#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/gate.hpp"
#include "strata/log.hpp"
#include "strata/model.hpp"

namespace strata {

experts::ModelIdentity profile_identity(const Model& model) {
  const experts::ExpertGeometry geometry = experts::expert_geometry(model.weights());
  return {gate::identify(model).header_hash, geometry.n_layer(), geometry.max_experts()};
}

experts::ProfileInfo model_profile_info(const Model& model) {
  experts::ProfileInfo info;
  const std::filesystem::path path = model.file().name();
  info.model_name = path.filename().string();
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  info.model_path = ec ? path.string() : absolute.string();
  info.file_bytes = model.file_bytes();
  return info;
}

experts::ExpertProfile engine_profile(Engine& engine, experts::ProfileInfo info) {
  const Model& model = engine.model();
  if (!model.hparams().has_experts())
    throw Error("a routing profile counts routed experts, and " + model_profile_info(model).model_name +
                " is a dense model (no experts)");
  const ExpertUsage usage = engine.expert_usage();
  if (usage.n_layer == 0)
    throw Error("this engine does not see its routing choices (every expert is on " + engine.backend().describe() +
                ", where they never leave the device): record on the CPU (--backend reference or cpu_avx2) or with "
                "the hybrid path (-o experts.cache=25%)");
  experts::ExpertProfile profile(profile_identity(model));
  if (usage.n_layer != profile.identity().n_layer || usage.n_expert != profile.identity().n_expert)
    throw Error("the engine counted routes of " + std::to_string(usage.n_layer) + " layers x " +
                std::to_string(usage.n_expert) + " experts; the model has " +
                std::to_string(profile.identity().n_layer) + " x " + std::to_string(profile.identity().n_expert));
  profile.add_counts(usage.routed, std::max<uint32_t>(model.hparams().n_expert_used, 1));
  profile.set_info(std::move(info));
  return profile;
}

std::optional<std::string> resolve_profile(const std::optional<std::string>& setting, const Model& model, bool used) {
  if (!setting) return std::nullopt;
  if (!model.hparams().has_experts()) {
    if (*setting == "auto") return std::nullopt;  // nothing to fill: a dense model has no expert cache
    throw Error("experts.profile: " + *setting + ": " + model_profile_info(model).model_name +
                " is a dense model (no routed experts, no expert cache): remove experts.profile");
  }
  const std::string use = used ? "" : " (unused: this engine has no expert cache; only the hybrid path fills one)";
  std::string path = *setting;
  if (path == "auto") {
    const std::filesystem::path beside = experts::default_profile_path(model.file().name());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(beside, ec)) {
      log::info("experts.profile auto: no profile beside the model (" + beside.string() +
                "); the cache starts uniform. `strata profile --model " + model.file().name() + "` writes one there");
      return std::nullopt;
    }
    path = beside.string();
    log::info("experts.profile auto: " + path + use);
  } else {
    log::info("experts.profile: " + path + use);
  }
  experts::ExpertProfile::load(path, profile_identity(model));  // throws with the file's problem
  return path;
}

}  // namespace strata
