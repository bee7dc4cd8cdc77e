// A generated tiny qwen3moe (mkmodel's `tiny` shape, q4_k_m, random experts that differ from each other), written
// once per test process into the temp folder and removed when the process ends. For tests that must notice an
// expert taken from the wrong place (stories260K-moe's experts are copies of one FFN).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "strata/mkmodel.hpp"

namespace strata::test {

inline const std::string& tiny_moe_model() {
  struct File {
    std::string path;
    File() {
      const auto p = std::filesystem::temp_directory_path() / ("strata_tiny_moe_" + std::to_string(::getpid()) + ".gguf");
      auto spec = mkmodel::shape_preset("tiny", Arch::Qwen3Moe);
      spec->quant = mkmodel::QuantPreset::Q4_K_M;
      spec->seed = 11;
      mkmodel::write_model(*spec, p.string(), {});
      path = p.string();
    }
    ~File() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const File file;
  return file.path;
}

}  // namespace strata::test
