#include "model_plan.hpp"

#include <cmath>
#include <string>

#include "quant_recipe.hpp"
#include "strata/arch.hpp"
#include "strata/error.hpp"
#include "vocab.hpp"

namespace strata::mkmodel {
namespace {

// llama.cpp's limits (LLAMA_MAX_LAYERS, LLAMA_MAX_EXPERTS).
constexpr uint32_t kMaxLayers = 512;
constexpr uint32_t kMaxExperts = 512;

Error bad(const std::string& what) { return Error("mkmodel: " + what); }

void check_positive(uint32_t v, const char* flag) {
  if (v == 0) throw bad(std::string(flag) + " must be at least 1");
}

void check_spec(const ModelSpec& s) {
  if (s.arch != Arch::Llama && s.arch != Arch::Qwen3Moe) {
    throw bad("--arch " + std::string(arch_name(s.arch)) + ": mkmodel writes llama and qwen3moe models");
  }
  check_positive(s.n_layer, "--layers");
  if (s.n_layer > kMaxLayers) throw bad("--layers " + std::to_string(s.n_layer) + ": llama.cpp allows at most 512");
  check_positive(s.n_embd, "--embd");
  check_positive(s.n_head, "--heads");
  check_positive(s.n_head_kv, "--kv-heads");
  check_positive(s.head_dim, "--head-dim");
  check_positive(s.n_ctx, "--context");
  if (s.n_head % s.n_head_kv != 0) {
    throw bad("--kv-heads " + std::to_string(s.n_head_kv) + " must divide --heads " + std::to_string(s.n_head));
  }
  if (s.head_dim % 2 != 0) throw bad("--head-dim " + std::to_string(s.head_dim) + " must be even (rope pairs)");
  if (s.arch == Arch::Qwen3Moe) {
    check_positive(s.n_expert, "--experts (qwen3moe has only expert layers)");
    check_positive(s.n_ff_exp, "--expert-ff");
  }
  check_positive(s.n_ff, s.arch == Arch::Llama ? "--ff" : "--ff (recorded as qwen3moe.feed_forward_length)");
  if (s.n_expert > kMaxExperts) throw bad("--experts " + std::to_string(s.n_expert) + ": llama.cpp allows at most 512");
  if (s.n_expert > 0 && (s.n_expert_used == 0 || s.n_expert_used > s.n_expert)) {
    throw bad("--experts-used " + std::to_string(s.n_expert_used) + " must be between 1 and --experts " +
              std::to_string(s.n_expert));
  }
  if (s.n_expert == 0 && s.router_skew != 0.0) throw bad("--router-skew needs experts (--experts N)");
  if (!(s.router_skew >= 0.0 && s.router_skew <= 8.0)) throw bad("--router-skew zipf:S takes S between 0 and 8");
  if (!(s.rope_theta > 0.0f)) throw bad("--rope-theta must be positive");
  if (!(s.rms_eps > 0.0f)) throw bad("--rms-eps must be positive");
  if (s.vocab_file.empty() && s.n_vocab < min_builtin_vocab(s.arch)) {
    throw bad("--vocab " + std::to_string(s.n_vocab) + ": the built-in vocabulary needs at least " +
              std::to_string(min_builtin_vocab(s.arch)) + " tokens");
  }
}

std::string default_name(const ModelSpec& s) {
  std::string name = "strata mkmodel ";
  name += arch_name(s.arch);
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about `" " + std::to_string(...)`.
  name += ' ';
  name += std::to_string(s.n_layer);
  name += "L ";
  name += std::to_string(s.n_embd);
  name += 'd';
  if (s.n_expert > 0) {
    name += ' ';
    name += std::to_string(s.n_expert);
    name += 'x';
  }
  name += ' ';
  name += preset_info(s.quant).name;
  return name;
}

void set_keys(const ModelSpec& s, gguf::Writer& w) {
  const std::string a(arch_name(s.arch));
  w.set_string("general.architecture", a);
  w.set_string("general.name", s.name.empty() ? default_name(s) : s.name);
  w.set_u32("general.file_type", preset_info(s.quant).file_type);
  if (s.quant != QuantPreset::F32) w.set_u32("general.quantization_version", 2);
  w.set_u32(a + ".block_count", s.n_layer);
  w.set_u32(a + ".context_length", s.n_ctx);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_head);
  w.set_u32(a + ".attention.head_count_kv", s.n_head_kv);
  w.set_f32(a + ".rope.freq_base", s.rope_theta);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_u32(a + ".attention.key_length", s.head_dim);
  w.set_u32(a + ".attention.value_length", s.head_dim);
  if (s.arch == Arch::Llama) w.set_u32(a + ".rope.dimension_count", s.head_dim);
  if (s.n_expert > 0) {
    w.set_u32(a + ".expert_count", s.n_expert);
    w.set_u32(a + ".expert_used_count", s.n_expert_used);
  }
  if (s.arch == Arch::Qwen3Moe) w.set_u32(a + ".expert_feed_forward_length", s.n_ff_exp);
  // How the file was made, so that it can be made again.
  w.set_u64("strata.mkmodel.seed", s.seed);
  w.set_string("strata.mkmodel.quant", preset_info(s.quant).name);
  if (s.router_skew > 0.0) w.set_f32("strata.mkmodel.router_skew", static_cast<float>(s.router_skew));
}

bool is_norm(const std::string& name) { return name.find("norm.weight") != std::string::npos; }
bool is_router(const std::string& name) { return name.find("ffn_gate_inp.weight") != std::string::npos; }

}  // namespace

Plan build_model(const ModelSpec& spec, gguf::Writer& w, std::vector<TensorFill>& fills) {
  check_spec(spec);
  set_keys(spec, w);
  if (spec.vocab_file.empty()) {
    write_builtin_vocab(w, spec.arch, spec.n_vocab);
  } else {
    copy_vocab(w, gguf::File::open(spec.vocab_file).metadata());
  }

  Plan plan;
  // The keys as llama.cpp (and strata's loader) will read them back.
  plan.hparams = read_hparams(gguf::File::from_memory(w.to_bytes({}), "mkmodel").metadata());

  std::vector<TensorSpec> specs = expected_tensors(plan.hparams);
  std::erase_if(specs, [](const TensorSpec& t) { return !t.required && t.name != "output.weight"; });
  const std::vector<format::GgmlType> types = choose_types(spec.quant, plan.hparams, specs);

  fills.clear();
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    const size_t index = w.add_tensor(t.name, types[i], t.ne);
    plan.tensors.push_back({t.name, types[i], t.ne, w.tensor_bytes(index)});
    TensorFill f;
    if (is_norm(t.name)) {
      f.kind = TensorFill::Kind::Ones;
    } else {
      // Unit gain per matrix: a row of n inputs with values of rms 1/sqrt(n) keeps unit-rms activations at unit
      // rms, so the residual stream grows only with the square root of the depth.
      f.kind = is_router(t.name) ? TensorFill::Kind::Router : TensorFill::Kind::Random;
      f.rms = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.ne[0])));
    }
    f.layer = static_cast<uint32_t>(t.name.rfind("blk.", 0) == 0 ? std::stoul(t.name.substr(4)) : 0);
    fills.push_back(f);
  }
  plan.file_bytes = w.file_size();
  return plan;
}

Plan plan_model(const ModelSpec& spec) {
  gguf::Writer w;
  std::vector<TensorFill> fills;
  return build_model(spec, w, fills);
}

}  // namespace strata::mkmodel
