#include "gpu_test_support.hpp"

#include <cstdlib>
#include <filesystem>

#include "strata/mkmodel.hpp"

namespace strata::gpu_tests {

const PluginRegistry& plugins() {
  static const PluginRegistry registry([] {
    PluginSearchPath p;
    p.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
    p.origins.push_back("build");
    return p;
  }());
  return registry;
}

std::string gpu_backend(std::string& why) {
  why = "no GPU backend plugin in " + std::string(STRATA_BUILD_PLUGIN_DIR);
  for (const PluginCandidate& c : plugins().candidates()) {
    if (c.kind != STRATA_KIND_BACKEND || (c.name != "cuda" && c.name != "hip")) continue;
    if (c.verdict == PluginCandidate::Verdict::Usable) return c.name;
    why = c.name + ": " + c.reason;
  }
  return "";
}

std::string gpu_with_model_30b(std::string& path, std::string& why) {
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) return "";
  const char* env = std::getenv("STRATA_GPU_MODEL_30B");
  if (env == nullptr || !std::filesystem::exists(env)) {
    why = "set STRATA_GPU_MODEL_30B to a generated qwen3-30b-a3b GGUF (scripts/gpu-check.sh does)";
    return "";
  }
  path = env;
  return gpu;
}

namespace {

std::string write_tiny(mkmodel::QuantPreset quant, const char* file, Arch arch = Arch::Qwen3Moe) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / file;
  auto spec = mkmodel::shape_preset("tiny", arch);
  spec->quant = quant;
  spec->seed = 7;
  mkmodel::write_model(*spec, p.string(), {});
  return p.string();
}

}  // namespace

const std::string& tiny_model() {
  static const std::string path = write_tiny(mkmodel::QuantPreset::Q4_K_M, "strata_gpu_tests_tiny_q4_k_m.gguf");
  return path;
}

const std::string& tiny_model_f32() {
  static const std::string path = write_tiny(mkmodel::QuantPreset::F32, "strata_gpu_tests_tiny_f32.gguf");
  return path;
}

const std::string& tiny_glm4moe() {
  static const std::string path =
      write_tiny(mkmodel::QuantPreset::Q4_K_M, "strata_gpu_tests_tiny_glm4moe_q4_k_m.gguf", Arch::Glm4Moe);
  return path;
}

const std::string& tiny_gpt_oss() {
  static const std::string path =
      write_tiny(mkmodel::QuantPreset::Q4_K_M, "strata_gpu_tests_tiny_gpt_oss_q4_k_m.gguf", Arch::GptOss);
  return path;
}

}  // namespace strata::gpu_tests
