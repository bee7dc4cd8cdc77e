#include "shipped_config.hpp"

#include <vector>

#include "strata/error.hpp"
#include "strata/executable.hpp"

namespace strata::cli {

std::filesystem::path shipped_config(const std::string& name) {
  std::vector<std::filesystem::path> folders = {STRATA_CONFIG_DIR};
  if (const std::filesystem::path exe = executable_folder(); !exe.empty()) {
    folders.push_back(exe / "configs");
    folders.push_back(exe / ".." / "share" / "strata" / "configs");
  }
  std::string looked;
  for (const auto& folder : folders) {
    const std::filesystem::path candidate = (folder / name).lexically_normal();
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate.string();
  }
  throw Error("the shipped launch " + name + " is not here (looked at " + looked + "); name a launch with --config FILE");
}

}  // namespace strata::cli
