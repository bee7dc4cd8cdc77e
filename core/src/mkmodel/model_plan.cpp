#include "model_plan.hpp"

#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

// llama.cpp's int(head_dim * partial_rotary_factor); deepseek2's qk_rope_head_dim.
uint32_t rope_dims(const ModelSpec& s) {
  if (s.arch == Arch::Deepseek2) return s.qk_rope_dim;
  return static_cast<uint32_t>(static_cast<double>(s.head_dim) * static_cast<double>(s.rope_fraction));
}

void check_positive(uint32_t v, const char* flag) {
  if (v == 0) throw bad(std::string(flag) + " must be at least 1");
}

bool arch_supported(Arch a) {
  return a == Arch::Llama || a == Arch::Qwen3Moe || a == Arch::GptOss || a == Arch::Glm4Moe || a == Arch::Deepseek2 ||
         a == Arch::Qwen3VlMoe;
}

// deepseek2's multi-head latent attention and group-limited routing, as llama.cpp reads them.
void check_deepseek2(const ModelSpec& s) {
  if (s.n_head_kv != 1) {
    throw bad("--kv-heads " + std::to_string(s.n_head_kv) + ": deepseek2 writes MLA as one shared key/value head (1)");
  }
  check_positive(s.kv_lora_rank, "kv_lora_rank");
  check_positive(s.v_head_dim, "v_head_dim");
  if (s.head_dim <= s.qk_rope_dim) {
    throw bad("--head-dim " + std::to_string(s.head_dim) + " leaves no un-rotated part next to the " +
              std::to_string(s.qk_rope_dim) + " rotated dims (deepseek2's head is qk_nope + qk_rope)");
  }
  check_positive(s.n_expert_shared, "expert_shared_count (deepseek2 has shared experts)");
  if (s.n_expert_groups > 0) {
    const std::string g = std::to_string(s.n_expert_groups);
    if (s.n_expert % s.n_expert_groups != 0) {
      throw bad("--experts " + std::to_string(s.n_expert) + " must be a multiple of the " + g + " expert groups");
    }
    if (s.n_group_used == 0 || s.n_group_used > s.n_expert_groups) {
      throw bad("expert groups used (" + std::to_string(s.n_group_used) + ") must be between 1 and " + g);
    }
    const uint32_t reachable = s.n_group_used * (s.n_expert / s.n_expert_groups);
    if (s.n_expert_used > reachable) {
      throw bad("--experts-used " + std::to_string(s.n_expert_used) + ": the " + std::to_string(s.n_group_used) +
                " groups used of " + g + " hold only " + std::to_string(reachable) + " of --experts " +
                std::to_string(s.n_expert));
    }
  }
}

// qwen3vlmoe's M-RoPE sections and deepstack count, as llama.cpp (and strata's loader) read them.
void check_qwen3vlmoe(const ModelSpec& s) {
  uint32_t pairs = 0;
  for (uint32_t v : s.rope_sections) pairs += v;
  if (pairs == 0 || pairs > s.head_dim / 2) {
    throw bad("rope sections sum to " + std::to_string(pairs) + " rotary pairs; --head-dim " +
              std::to_string(s.head_dim) + " has 1.." + std::to_string(s.head_dim / 2));
  }
  if (s.n_deepstack >= s.n_layer) {
    throw bad("--layers " + std::to_string(s.n_layer) + ": qwen3vlmoe adds an image's " +
              std::to_string(s.n_deepstack) + " deepstack parts after blocks 0.." + std::to_string(s.n_deepstack - 1) +
              ", so it needs at least " + std::to_string(s.n_deepstack + 1) + " blocks");
  }
}

void check_spec(const ModelSpec& s) {
  if (!arch_supported(s.arch)) {
    throw bad("--arch " + std::string(arch_name(s.arch)) +
              ": mkmodel writes llama, qwen3moe, gpt-oss, glm4moe, deepseek2 and qwen3vlmoe models");
  }
  check_positive(s.n_layer, "--layers");
  if (s.n_layer + s.n_layer_nextn > kMaxLayers) {
    throw bad("--layers " + std::to_string(s.n_layer) + ": llama.cpp allows at most 512 blocks");
  }
  check_positive(s.n_embd, "--embd");
  check_positive(s.n_head, "--heads");
  check_positive(s.n_head_kv, "--kv-heads");
  check_positive(s.head_dim, "--head-dim");
  check_positive(s.n_ctx, "--context");
  if (s.n_head % s.n_head_kv != 0) {
    throw bad("--kv-heads " + std::to_string(s.n_head_kv) + " must divide --heads " + std::to_string(s.n_head));
  }
  if (s.head_dim % 2 != 0) throw bad("--head-dim " + std::to_string(s.head_dim) + " must be even (rope pairs)");
  const std::string a(arch_name(s.arch));
  if (s.arch != Arch::Llama) {
    const std::string why = s.arch == Arch::Glm4Moe || s.arch == Arch::Deepseek2 ? a + " needs experts"
                                                                                   : a + " has only expert layers";
    check_positive(s.n_expert, ("--experts (" + why + ")").c_str());
    check_positive(s.n_ff_exp, "--expert-ff");
  }
  const bool leads = s.arch == Arch::Glm4Moe || s.arch == Arch::Deepseek2;
  check_positive(s.n_ff, s.arch == Arch::Llama ? "--ff"
                         : leads               ? "--ff (the leading dense blocks' width)"
                                               : ("--ff (recorded as " + a + ".feed_forward_length)").c_str());
  if (s.n_expert > kMaxExperts) throw bad("--experts " + std::to_string(s.n_expert) + ": llama.cpp allows at most 512");
  if (s.n_expert > 0 && (s.n_expert_used == 0 || s.n_expert_used > s.n_expert)) {
    throw bad("--experts-used " + std::to_string(s.n_expert_used) + " must be between 1 and --experts " +
              std::to_string(s.n_expert));
  }
  if (s.n_expert == 0 && s.router_skew != 0.0) throw bad("--router-skew needs experts (--experts N)");
  if (!(s.router_skew >= 0.0 && s.router_skew <= 8.0)) throw bad("--router-skew zipf:S takes S between 0 and 8");
  if (!(s.rope_theta > 0.0f)) throw bad("--rope-theta must be positive");
  if (!(s.rms_eps > 0.0f)) throw bad("--rms-eps must be positive");
  if (!(s.rope_fraction > 0.0f && s.rope_fraction <= 1.0f)) throw bad("rope_fraction must be in (0, 1]");
  if (rope_dims(s) < 2 || rope_dims(s) % 2 != 0) {
    throw bad("--head-dim " + std::to_string(s.head_dim) + ": its rotated part (" + std::to_string(rope_dims(s)) +
              " dims) must be even and at least 2");
  }
  if (s.yarn_factor < 0.0f) throw bad("yarn_factor must not be negative");
  // The architecture-only fields, refused elsewhere rather than silently dropped.
  const bool gpt_oss = s.arch == Arch::GptOss, glm = s.arch == Arch::Glm4Moe, ds2 = s.arch == Arch::Deepseek2;
  if (gpt_oss && s.sliding_window == 0) throw bad("gpt-oss needs a sliding window (attention.sliding_window)");
  if (!gpt_oss && s.sliding_window != 0) throw bad("a sliding window is gpt-oss's (the arch reads no such key)");
  if (!leads && (s.n_expert_shared != 0 || s.n_layer_dense_lead != 0 || s.n_layer_nextn != 0 ||
                 s.expert_weights_scale != 0.0f)) {
    throw bad("shared experts, leading dense blocks, nextn blocks and expert_weights_scale are written for glm4moe "
              "and deepseek2 only");
  }
  if (!glm && (s.qk_norm || s.rope_fraction != 1.0f)) {
    throw bad("optional q/k norms and partial rotary are written for glm4moe only");
  }
  if (!ds2 && (s.q_lora_rank != 0 || s.kv_lora_rank != 0 || s.qk_rope_dim != 0 || s.v_head_dim != 0 ||
               s.n_expert_groups != 0 || s.n_group_used != 0)) {
    throw bad("latent attention (q/kv LoRA ranks, rope and value head sizes) and expert groups are written for "
              "deepseek2 only");
  }
  if (ds2) check_deepseek2(s);
  const bool vl = s.arch == Arch::Qwen3VlMoe;
  if (!vl && (s.n_deepstack != 0 || s.rope_sections != std::array<uint32_t, 4>{} || s.projector)) {
    throw bad("M-RoPE sections, deepstack parts and a vision projector are written for qwen3vlmoe only");
  }
  if (vl) check_qwen3vlmoe(s);
  if (s.projector) check_projector(s);
  if (s.attn_bias && !gpt_oss && !glm) throw bad("attention biases are written for gpt-oss and glm4moe only");
  if (leads && s.n_layer_dense_lead > s.n_layer) {
    throw bad("leading dense blocks (" + std::to_string(s.n_layer_dense_lead) + ") are more than --layers " +
              std::to_string(s.n_layer));
  }
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
  w.set_u32(a + ".block_count", s.n_layer + s.n_layer_nextn);
  w.set_u32(a + ".context_length", s.n_ctx);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_head);
  w.set_u32(a + ".attention.head_count_kv", s.n_head_kv);
  w.set_f32(a + ".rope.freq_base", s.rope_theta);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  if (s.arch == Arch::Deepseek2) {
    // MLA as llama.cpp's converter writes it: one key/value head of the latent plus the rotated part, and the
    // decompressed head sizes under the *_mla keys.
    w.set_u32(a + ".attention.key_length", s.kv_lora_rank + s.qk_rope_dim);
    w.set_u32(a + ".attention.value_length", s.kv_lora_rank);
    if (s.q_lora_rank > 0) w.set_u32(a + ".attention.q_lora_rank", s.q_lora_rank);
    w.set_u32(a + ".attention.kv_lora_rank", s.kv_lora_rank);
    w.set_u32(a + ".attention.key_length_mla", s.head_dim);
    w.set_u32(a + ".attention.value_length_mla", s.v_head_dim);
  } else {
    w.set_u32(a + ".attention.key_length", s.head_dim);
    w.set_u32(a + ".attention.value_length", s.head_dim);
  }
  // llama.cpp's converters write the rotary width for llama, glm4moe (partial rotary) and deepseek2 (qk_rope).
  if (s.arch == Arch::Llama || s.arch == Arch::Glm4Moe || s.arch == Arch::Deepseek2) {
    w.set_u32(a + ".rope.dimension_count", rope_dims(s));
  }
  if (s.arch == Arch::Qwen3VlMoe) {
    // convert_hf_to_gguf's Qwen3VLMoeTextModel: mrope_section padded to four, and the number of deepstack indexes.
    std::array<int32_t, 4> sections{};
    for (size_t i = 0; i < 4; ++i) sections[i] = static_cast<int32_t>(s.rope_sections[i]);
    w.set_array(a + ".rope.dimension_sections", std::span<const int32_t>(sections));
    w.set_u32(a + ".n_deepstack_layers", s.n_deepstack);
  }
  if (s.yarn_factor > 0.0f) {
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", s.yarn_factor);
    w.set_u32(a + ".rope.scaling.original_context_length", s.yarn_orig_ctx > 0 ? s.yarn_orig_ctx : s.n_ctx);
    if (s.yarn_beta_fast > 0.0f) w.set_f32(a + ".rope.scaling.yarn_beta_fast", s.yarn_beta_fast);
    if (s.yarn_beta_slow > 0.0f) w.set_f32(a + ".rope.scaling.yarn_beta_slow", s.yarn_beta_slow);
    if (s.yarn_log_mul > 0.0f) w.set_f32(a + ".rope.scaling.yarn_log_multiplier", s.yarn_log_mul);
  }
  if (s.n_expert > 0) {
    w.set_u32(a + ".expert_count", s.n_expert);
    w.set_u32(a + ".expert_used_count", s.n_expert_used);
  }
  if (s.arch != Arch::Llama) w.set_u32(a + ".expert_feed_forward_length", s.n_ff_exp);
  if (s.arch == Arch::GptOss) w.set_u32(a + ".attention.sliding_window", s.sliding_window);
  if (s.arch == Arch::Glm4Moe) {
    // The keys of convert_hf_to_gguf.py's Glm4MoeModel, in its order.
    w.set_u32(a + ".expert_shared_count", s.n_expert_shared);
    w.set_u32(a + ".leading_dense_block_count", s.n_layer_dense_lead);
    w.set_u32(a + ".expert_gating_func", static_cast<uint32_t>(GatingFunc::Sigmoid));
    if (s.expert_weights_scale > 0.0f) w.set_f32(a + ".expert_weights_scale", s.expert_weights_scale);
    w.set_bool(a + ".expert_weights_norm", s.expert_weights_norm);
    w.set_u32(a + ".nextn_predict_layers", s.n_layer_nextn);
  }
  if (s.arch == Arch::Deepseek2) {
    // The keys of convert_hf_to_gguf's DeepseekV2Model and its TextModel base (vocab_size follows the vocabulary,
    // in build_model); nextn_predict_layers as glm4moe's, which llama.cpp reads for deepseek2 too.
    w.set_u32(a + ".leading_dense_block_count", s.n_layer_dense_lead);
    w.set_u32(a + ".expert_shared_count", s.n_expert_shared);
    if (s.expert_weights_scale > 0.0f) w.set_f32(a + ".expert_weights_scale", s.expert_weights_scale);
    if (s.expert_weights_norm) w.set_bool(a + ".expert_weights_norm", true);
    w.set_u32(a + ".expert_gating_func", static_cast<uint32_t>(GatingFunc::Sigmoid));
    if (s.n_expert_groups > 0) {
      w.set_u32(a + ".expert_group_count", s.n_expert_groups);
      w.set_u32(a + ".expert_group_used_count", s.n_group_used);
    }
    w.set_u32(a + ".nextn_predict_layers", s.n_layer_nextn);
  }
  // How the file was made, so that it can be made again.
  w.set_u64("strata.mkmodel.seed", s.seed);
  w.set_string("strata.mkmodel.quant", preset_info(s.quant).name);
  if (s.router_skew > 0.0) w.set_f32("strata.mkmodel.router_skew", static_cast<float>(s.router_skew));
}

bool is_norm(const std::string& name) { return name.find("norm.weight") != std::string::npos; }
bool is_router(const std::string& name) { return name.find("ffn_gate_inp.weight") != std::string::npos; }

// The block of a "blk.N." name; nullopt for the others.
std::optional<uint32_t> block_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(name.substr(4)));
}

// Which of the architecture's optional tensors the file carries: output.weight always (no shape ties it), the
// q/k/v biases and the q/k norms when the spec asks for them; deepseek2's exp_probs_b (DeepSeek-V3's
// e_score_correction_bias) and its nextn blocks, which llama.cpp lists as optional because its converter drops
// them. Fused forms (attn_qkv, ffn_gate_up_exps) and the nextn blocks' optional head copies never.
bool keep_tensor(const ModelSpec& s, const TensorSpec& t) {
  if (t.required || t.name == "output.weight") return true;
  if (s.arch == Arch::Deepseek2) {
    if (t.name.ends_with(".exp_probs_b.bias")) return true;
    const auto block = block_of(t.name);
    const bool head_copy = t.name.find(".nextn.embed_tokens.") != std::string::npos ||
                           t.name.find(".nextn.shared_head_") != std::string::npos;
    const bool fused = t.name.find("ffn_gate_up_exps") != std::string::npos;
    if (block && *block >= s.n_layer && !head_copy && !fused) return true;
  }
  const bool qkv_bias = t.name.ends_with(".attn_q.bias") || t.name.ends_with(".attn_k.bias") ||
                        t.name.ends_with(".attn_v.bias");
  const bool qk_norm = t.name.ends_with(".attn_q_norm.weight") || t.name.ends_with(".attn_k_norm.weight");
  return (s.attn_bias && qkv_bias) || (s.qk_norm && qk_norm);
}

// The spread of the tensors that are no matrices (F32 vectors). Modest next to what they are added to, so that the
// random model behaves: attention and expert biases 0.02 beside projections of unit rms; the router bias 0.1 beside
// logits of unit rms (every expert still gets chosen); exp_probs_b 0.01 beside sigmoid scores spread about 0.2 (the
// choice follows the logits); attention sinks 0.5 beside scores of unit rms (a sink takes a modest share).
std::optional<float> vector_rms(const std::string& name) {
  if (name.ends_with(".attn_sinks.weight")) return 0.5f;
  if (name.ends_with(".exp_probs_b.bias")) return 0.01f;
  if (name.ends_with(".ffn_gate_inp.bias")) return 0.1f;
  if (name.ends_with(".bias")) return 0.02f;
  return std::nullopt;
}

}  // namespace

Plan build_model(const ModelSpec& spec, gguf::Writer& w, std::vector<TensorFill>& fills) {
  check_spec(spec);
  set_keys(spec, w);
  uint32_t n_vocab = spec.n_vocab;
  if (spec.vocab_file.empty()) {
    write_builtin_vocab(w, spec.arch, spec.n_vocab);
  } else {
    n_vocab = copy_vocab(w, gguf::File::open(spec.vocab_file).metadata());
  }
  if (spec.arch == Arch::Deepseek2) w.set_u32(std::string(arch_name(spec.arch)) + ".vocab_size", n_vocab);

  Plan plan;
  // The keys as llama.cpp (and strata's loader) will read them back.
  plan.hparams = read_hparams(gguf::File::from_memory(w.to_bytes({}), "mkmodel").metadata());

  std::vector<TensorSpec> specs = expected_tensors(plan.hparams);
  std::erase_if(specs, [&spec](const TensorSpec& t) { return !keep_tensor(spec, t); });
  const std::vector<format::GgmlType> types = choose_types(spec.quant, plan.hparams, specs);

  fills.clear();
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    const size_t index = w.add_tensor(t.name, types[i], t.ne);
    plan.tensors.push_back({t.name, types[i], t.ne, w.tensor_bytes(index)});
    TensorFill f;
    if (is_norm(t.name)) {
      f.kind = TensorFill::Kind::Ones;
    } else if (const auto rms = vector_rms(t.name)) {
      f.kind = TensorFill::Kind::Random;
      f.rms = *rms;
    } else {
      // Unit gain per matrix: a row of n inputs with values of rms 1/sqrt(n) keeps unit-rms activations at unit
      // rms, so the residual stream grows only with the square root of the depth.
      // deepseek2's attn_k_b sums over its second dimension (the latent, kv_lora_rank values per key), not over
      // its rows.
      f.kind = is_router(t.name) ? TensorFill::Kind::Router : TensorFill::Kind::Random;
      const uint64_t fan_in = t.name.ends_with(".attn_k_b.weight") ? t.ne[1] : t.ne[0];
      f.rms = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
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
