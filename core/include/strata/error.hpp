// Errors a user can act on. Core throws strata::Error for bad input (a file, a flag, a config, a plugin); the
// CLI prints its message and exits 2. Messages name the problem and, where there is one, the fix.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace strata
