#include "strata/executable.hpp"

#include <unistd.h>

#include <array>
#include <string>

namespace strata {

std::filesystem::path executable_folder() {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  return std::filesystem::path(std::string(buf.data(), static_cast<size_t>(n))).parent_path();
}

}  // namespace strata
