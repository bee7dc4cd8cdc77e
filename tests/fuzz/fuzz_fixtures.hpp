// The real data files a fuzz target is built with (tests/fuzz/CMakeLists.txt passes their paths joined by '|' in a
// compile definition), loaded once; a file that cannot be read stops the target with its path.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace strata::fuzz {

inline std::vector<std::string> fixture_paths(std::string_view joined) {
  std::vector<std::string> paths;
  for (size_t start = 0; start <= joined.size();) {
    const size_t end = std::min(joined.find('|', start), joined.size());
    if (end > start) paths.emplace_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return paths;
}

inline std::string fixture_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz fixture %s cannot be read\n", path.c_str());
    std::abort();
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace strata::fuzz
