// What the GPU test files share: the build's plugin registry and the usable GPU backend's name.
#pragma once

#include <string>

#include "strata/plugin_host.hpp"

namespace strata::gpu_tests {

const PluginRegistry& plugins();
// The usable GPU backend plugin (cuda or hip), or "" with the reason in `why`.
std::string gpu_backend(std::string& why);
// The usable GPU backend and the generated qwen3-30b-a3b GGUF named by STRATA_GPU_MODEL_30B (scripts/gpu-check.sh
// sets it) in `path`, or "" with the reason in `why`.
std::string gpu_with_model_30b(std::string& path, std::string& why);
// The generated `tiny` qwen3moe (q4_k_m, seed 7), written once per run of the binary into the temp folder.
const std::string& tiny_model();
// The same weights' draw with every tensor F32 (no product quantizes its activations).
const std::string& tiny_model_f32();
// The generated `tiny` glm4moe and gpt-oss (q4_k_m, seed 7): q, k and v biases, shared experts, sigmoid routing,
// sliding windows and sinks, MXFP4 experts.
const std::string& tiny_glm4moe();
const std::string& tiny_gpt_oss();

}  // namespace strata::gpu_tests
