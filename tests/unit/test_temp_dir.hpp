// A scratch folder per test binary and process, removed when the binary's tests end (runs may overlap).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace strata::testing_support {

inline const std::filesystem::path& test_temp_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "strata_tests" / std::to_string(::getpid());
  return dir;
}

class RemoveTestTempDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(test_temp_dir(), ec);
  }
};

// A path in the scratch folder; `prefix` keeps each suite's files apart.
inline std::string test_temp_path(const std::string& prefix, const std::string& name) {
  static ::testing::Environment* const registered = ::testing::AddGlobalTestEnvironment(new RemoveTestTempDir);
  (void)registered;
  const std::filesystem::path dir = test_temp_dir() / prefix;
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace strata::testing_support
