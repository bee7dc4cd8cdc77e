#include "text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "strata/error.hpp"

namespace strata::gate {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("cannot read " + what + " '" + path + "': it is a folder");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + what + " '" + path + "': " + (errno != 0 ? std::strerror(errno) : "cannot open it"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  return ss.str();
}

}  // namespace strata::gate
