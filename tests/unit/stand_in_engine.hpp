// An engine whose device is a stand-in GPU over cpu_avx2 (stand_in_gpu.hpp): the GPU engine's paths (weights on a
// device, MOE_ROUTED, the hybrid path with its expert pool) exercised on a CPU.
#pragma once

#include <memory>
#include <string>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"

namespace strata::test {

// With `pool`, cpu_avx2's expert pool computes the misses when `settings` give an expert budget (the hybrid path).
inline std::unique_ptr<Engine> open_stand_in_engine(const std::string& model_path, const EngineSettings& settings,
                                                    bool pool = true) {
  auto gpu = std::make_unique<StandInGpu>(open_backend("cpu_avx2"));
  if (!pool) return std::make_unique<Engine>(Model::load(model_path), std::move(gpu), settings);
  return std::make_unique<Engine>(Model::load(model_path), std::move(gpu), settings,
                                  built_plugins().instantiate("cpu_avx2"));
}

}  // namespace strata::test
