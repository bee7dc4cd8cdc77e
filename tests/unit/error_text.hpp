// The message a call throws as strata::Error, or "no error": tests compare it with the expected text.
#pragma once

#include <functional>
#include <string>

#include "strata/error.hpp"

namespace strata::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace strata::test
