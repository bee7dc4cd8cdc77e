// The named model shapes of `strata mkmodel --shape`.
#include <string>

#include "strata/mkmodel.hpp"

namespace strata::mkmodel {
namespace {

// Qwen3-MoE's published shapes (config.json of Qwen/Qwen3-30B-A3B and Qwen/Qwen3-235B-A22B).
ModelSpec qwen3(uint32_t layers, uint32_t embd, uint32_t heads, uint32_t ff, uint32_t expert_ff) {
  ModelSpec s;
  s.n_layer = layers;
  s.n_embd = embd;
  s.n_head = heads;
  s.n_head_kv = 4;
  s.head_dim = 128;
  s.n_ff = ff;
  s.n_ff_exp = expert_ff;
  s.n_expert = 128;
  s.n_expert_used = 8;
  s.n_vocab = 151936;
  s.n_ctx = 40960;
  s.rope_theta = 1e6f;
  s.rms_eps = 1e-6f;
  return s;
}

}  // namespace

std::optional<ModelSpec> shape_preset(std::string_view name, Arch arch) {
  std::optional<ModelSpec> s;
  if (name == "tiny") {
    // A few MB: every row width is a multiple of 256, so every block type divides it.
    s.emplace();
    s->n_layer = 4;
    s->n_embd = 256;
    s->n_head = 4;
    s->n_head_kv = 2;
    s->head_dim = 64;
    s->n_ff = 512;
    s->n_ff_exp = 256;
    s->n_expert = 8;
    s->n_expert_used = 2;
    s->n_vocab = 4096;
    s->n_ctx = 4096;
    s->rope_theta = arch == Arch::Llama ? 10000.0f : 1e6f;
    s->rms_eps = arch == Arch::Llama ? 1e-5f : 1e-6f;
  } else if (name == "qwen3-30b-a3b") {
    s = qwen3(48, 2048, 32, 6144, 768);
  } else if (name == "qwen3-235b-a22b") {
    s = qwen3(94, 4096, 64, 12288, 1536);
  }
  if (s) {
    s->arch = arch;
    // llama's experts are as wide as feed_forward_length.
    if (arch == Arch::Llama) s->n_ff = s->n_ff_exp;
  }
  return s;
}

std::string shape_names() { return "tiny, qwen3-30b-a3b, qwen3-235b-a22b"; }

}  // namespace strata::mkmodel
