// A tiny model of any architecture the arch check knows, with random F32 weights, for tests of forward passes that
// have no reference file: the keys a test sets, stories260K's vocabulary (512 SPM pieces), and every tensor of the
// architecture's list (arch.hpp) that is required, plus the optional biases (not the fused forms, nor the optional
// extra heads). Each tensor's values come from its own name's stream, so two models that share a tensor name and
// shape share its values (a model with and without a trailing MTP block, say). Norm weights are 1 + 0.1 N(0,1),
// biases 0.2 N(0,1), token_embd N(0,1), other matrices N(0,1) / sqrt(row length); `tweak` may change any tensor.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "strata/arch.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"
#include "test_temp_dir.hpp"

namespace strata::test {

inline std::string write_random_model(const std::string& file_name, const std::function<void(gguf::Writer&)>& keys,
                                      const std::function<void(const std::string&, std::vector<float>&)>& tweak = {}) {
  const gguf::Model src = gguf::Model::open(models_dir() + "/stories260K.gguf");
  const std::string keys_path = testing_support::test_temp_path("random_model", file_name + ".keys");
  {
    gguf::Writer w;
    for (const auto& kv : src.metadata().entries()) {
      const std::string key(kv.key);
      if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, kv.value);
    }
    keys(w);
    w.open(keys_path);
    w.close();
  }
  const gguf::Model header = gguf::Model::open(keys_path);
  const HParams hp = read_hparams(header.metadata());
  gguf::Writer t;
  for (const auto& kv : header.metadata().entries()) t.set_value(kv.key, kv.value);
  std::vector<std::vector<float>> data;
  for (const TensorSpec& s : expected_tensors(hp)) {
    const bool bias = s.name.find(".bias") != std::string::npos;
    const bool fused = s.name.find("attn_qkv") != std::string::npos || !s.replaces.empty();
    if (fused || (!s.required && !bias)) continue;
    uint64_t n = 1;
    for (uint64_t d : s.ne) n *= d;
    uint32_t seed = 2166136261u;  // FNV-1a of the name
    for (char c : s.name) seed = (seed ^ static_cast<uint8_t>(c)) * 16777619u;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const bool norm = s.name.find("norm") != std::string::npos;
    const float rms = bias ? 0.2f : s.name == "token_embd.weight" ? 1.0f : 1.0f / std::sqrt(static_cast<float>(s.ne[0]));
    std::vector<float> v(n);
    for (float& x : v) x = norm ? 1.0f + 0.1f * normal(rng) : rms * normal(rng);
    if (tweak) tweak(s.name, v);
    t.add_tensor(s.name, format::GgmlType::F32, s.ne);
    data.push_back(std::move(v));
  }
  const std::string path = testing_support::test_temp_path("random_model", file_name);
  t.open(path);
  for (size_t i = 0; i < data.size(); ++i) {
    t.write_tensor(i, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data[i].data()),
                                               data[i].size() * sizeof(float)));
  }
  t.close();
  return path;
}

}  // namespace strata::test
