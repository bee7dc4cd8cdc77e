// The launches that ship in the repository's configs/ folder, found from the executable: commands that have a
// default launch of their own (`strata gate` uses configs/gate-default.yaml) look them up here.
#pragma once

#include <filesystem>
#include <string>

namespace strata::cli {

// The first existing <folder>/<name> among: the source tree's configs/ this executable was built from, then
// configs/ next to the executable, then ../share/strata/configs/ from it. Throws strata::Error listing the
// places looked at and the fix (--config FILE) when none has it.
std::filesystem::path shipped_config(const std::string& name);

}  // namespace strata::cli
