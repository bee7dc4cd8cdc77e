// Where the running executable lives: plugins and shipped launches are looked for next to it.
#pragma once

#include <filesystem>

namespace strata {

// The folder of /proc/self/exe, or an empty path when it cannot be read.
std::filesystem::path executable_folder();

}  // namespace strata
