#include "strata/hparams.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace strata {
namespace {

using gguf::MetadataError;

struct ArchName {
  Arch arch;
  std::string_view name;
};
constexpr std::array<ArchName, 7> kArchNames = {{
    {Arch::Llama, "llama"},
    {Arch::Qwen3Moe, "qwen3moe"},
    {Arch::Qwen2Moe, "qwen2moe"},
    {Arch::Deepseek2, "deepseek2"},
    {Arch::GptOss, "gpt-oss"},
    {Arch::Glm4Moe, "glm4moe"},
    {Arch::Qwen3VlMoe, "qwen3vlmoe"},
}};

// Reads `<arch>.<field>` keys with the architecture's prefix and turns absence into messages that name the key.
class Keys {
 public:
  Keys(const gguf::Metadata& md, std::string_view arch) : md_(md), arch_(arch) {}

  std::string key(std::string_view field) const { return std::string(arch_) + "." + std::string(field); }

  std::optional<uint32_t> find_u32(std::string_view field) const {
    const std::string k = key(field);
    const gguf::KeyValue* kv = md_.find(k);
    if (kv == nullptr) return std::nullopt;
    // Some keys may be per-layer arrays in llama.cpp; one value for every layer is the only form used here.
    if (kv->value.type() == gguf::ValueType::Array) {
      const auto values = kv->value.as_array()->to_u32();
      if (!values || values->empty()) throw MetadataError(k + ": " + kv->value.describe() + ", expected u32");
      for (uint32_t v : *values) {
        if (v != values->front()) {
          throw MetadataError(k + ": per-layer values differ; models whose layers differ in this are not supported");
        }
      }
      return values->front();
    }
    return md_.find_u32(k);
  }
  uint32_t get_u32(std::string_view field) const {
    if (auto v = find_u32(field)) return *v;
    throw missing(field);
  }
  uint32_t u32_or(std::string_view field, uint32_t fallback) const { return find_u32(field).value_or(fallback); }
  float f32_or(std::string_view field, float fallback) const { return md_.find_f32(key(field)).value_or(fallback); }
  float get_f32(std::string_view field) const {
    if (auto v = md_.find_f32(key(field))) return *v;
    throw missing(field);
  }
  bool bool_or(std::string_view field, bool fallback) const { return md_.find_bool(key(field)).value_or(fallback); }
  std::optional<std::string_view> find_string(std::string_view field) const { return md_.find_string(key(field)); }

  MetadataError missing(std::string_view field) const {
    return MetadataError(md_.file_name() + ": " + key(field) + ": missing; a " + std::string(arch_) +
                         " model needs it");
  }
  MetadataError invalid(std::string_view field, const std::string& why) const {
    return MetadataError(md_.file_name() + ": " + key(field) + ": " + why);
  }

 private:
  const gguf::Metadata& md_;
  std::string_view arch_;
};

uint32_t read_vocab_size(const gguf::Metadata& md, const Keys& keys) {
  if (auto n = keys.find_u32("vocab_size")) return *n;
  if (auto tokens = md.find_array("tokenizer.ggml.tokens")) return static_cast<uint32_t>(tokens->size());
  throw MetadataError(md.file_name() + ": " + keys.key("vocab_size") +
                      " and tokenizer.ggml.tokens: both missing; the vocabulary size is unknown");
}

RopeScaling read_rope_scaling(const Keys& keys) {
  const auto type = keys.find_string("rope.scaling.type");
  if (!type || *type == "linear") return RopeScaling::Linear;
  if (*type == "none") return RopeScaling::None;
  if (*type == "yarn") return RopeScaling::Yarn;
  if (*type == "longrope") return RopeScaling::LongRope;
  throw keys.invalid("rope.scaling.type", "\"" + std::string(*type) + "\" is not one of none, linear, yarn, longrope");
}

GatingFunc read_gating(const Keys& keys, GatingFunc fallback) {
  const uint32_t v = keys.u32_or("expert_gating_func", 0);
  switch (v) {
    case 0: return fallback;  // "none": the architecture's own choice
    case 1: return GatingFunc::Softmax;
    case 2: return GatingFunc::Sigmoid;
    case 3: return GatingFunc::SoftmaxWeight;
    default:
      throw keys.invalid("expert_gating_func",
                         std::to_string(v) + " is not 1 (softmax), 2 (sigmoid) or 3 (softmax over the chosen)");
  }
}

// The keys every architecture shares (llama.cpp's llama_model::load_hparams).
void read_common(const gguf::Metadata& md, const Keys& keys, HParams& hp) {
  hp.n_ctx_train = keys.get_u32("context_length");
  hp.n_embd = keys.get_u32("embedding_length");
  hp.n_layer = keys.get_u32("block_count");
  hp.n_expert = keys.u32_or("expert_count", 0);
  hp.n_expert_used = keys.u32_or("expert_used_count", 0);
  hp.n_ff = keys.u32_or("feed_forward_length", 0);
  hp.n_head = keys.get_u32("attention.head_count");
  hp.n_head_kv = keys.u32_or("attention.head_count_kv", hp.n_head);
  hp.rms_eps = keys.get_f32("attention.layer_norm_rms_epsilon");
  hp.n_vocab = read_vocab_size(md, keys);

  if (hp.n_layer == 0) throw keys.invalid("block_count", "0; a model needs at least one block");
  if (hp.n_embd == 0) throw keys.invalid("embedding_length", "0");
  if (hp.n_head == 0) throw keys.invalid("attention.head_count", "0");
  if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0) {
    throw keys.invalid("attention.head_count_kv", std::to_string(hp.n_head_kv) + " does not divide head_count " +
                                                      std::to_string(hp.n_head));
  }

  hp.rope_freq_base = keys.f32_or("rope.freq_base", 10000.0f);
  hp.rope_scaling = read_rope_scaling(keys);
  float factor = keys.f32_or("rope.scaling.factor", 0.0f);
  if (factor == 0.0f) factor = keys.f32_or("rope.scale_linear", 0.0f);
  hp.rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
  hp.rope_attn_factor = keys.f32_or("rope.scaling.attn_factor", 1.0f);
  hp.rope_orig_ctx = keys.u32_or("rope.scaling.original_context_length", hp.n_ctx_train);
  hp.yarn_log_mul = keys.f32_or("rope.scaling.yarn_log_multiplier", 0.0f);
  hp.yarn_ext_factor = keys.f32_or("rope.scaling.yarn_ext_factor", -1.0f);
  hp.yarn_attn_factor = keys.f32_or("rope.scaling.yarn_attn_factor", 1.0f);
  hp.yarn_beta_fast = keys.f32_or("rope.scaling.yarn_beta_fast", 32.0f);
  hp.yarn_beta_slow = keys.f32_or("rope.scaling.yarn_beta_slow", 1.0f);

  hp.head_dim_k = keys.u32_or("attention.key_length", hp.n_embd / hp.n_head);
  hp.head_dim_v = keys.u32_or("attention.value_length", hp.n_embd / hp.n_head);
  hp.n_rot = keys.u32_or("rope.dimension_count", hp.head_dim_k);
  if (hp.head_dim_k == 0 || hp.head_dim_v == 0) {
    throw keys.invalid("attention.key_length", "head size 0 (embedding_length smaller than head_count?)");
  }

  const float scale = keys.f32_or("expert_weights_scale", 0.0f);
  hp.expert_weights_scale = scale == 0.0f ? 1.0f : scale;
  hp.expert_weights_norm = keys.bool_or("expert_weights_norm", false);
}

void require_experts(const Keys& keys, const HParams& hp) {
  if (hp.n_expert == 0) throw keys.missing("expert_count");
  if (hp.n_expert_used == 0) throw keys.missing("expert_used_count");
}

// Routed expert width for the Qwen MoE families: the key, else llama.cpp's fallback n_ff / n_expert_used.
uint32_t qwen_expert_ff(const Keys& keys, const HParams& hp) {
  if (auto v = keys.find_u32("expert_feed_forward_length")) return *v;
  if (hp.n_ff == 0) throw keys.missing("expert_feed_forward_length");
  return hp.n_ff / hp.n_expert_used;
}

void read_llama(const Keys& keys, HParams& hp) {
  if (hp.n_rot != hp.head_dim_k) {
    throw keys.invalid("rope.dimension_count", std::to_string(hp.n_rot) + ", but llama rotates whole heads of " +
                                                   std::to_string(hp.head_dim_k));
  }
  if (hp.n_ff == 0) throw keys.missing("feed_forward_length");
  // Mixtral-style: each expert is as wide as feed_forward_length; the k chosen weights are renormalized.
  hp.n_ff_exp = hp.n_expert > 0 ? hp.n_ff : 0;
  hp.n_ff_shexp = keys.u32_or("expert_shared_feed_forward_length", 0);
  hp.expert_weights_norm = true;
  hp.gating = GatingFunc::Softmax;
}

void read_qwen3moe(const Keys& keys, HParams& hp) {
  require_experts(keys, hp);
  hp.n_ff_exp = qwen_expert_ff(keys, hp);
  hp.expert_weights_norm = true;
  hp.gating = GatingFunc::Softmax;
}

// qwen3moe plus interleaved M-RoPE (its four sections are required, as llama.cpp requires them) and deepstack.
void read_qwen3vlmoe(const gguf::Metadata& md, const Keys& keys, HParams& hp) {
  read_qwen3moe(keys, hp);
  const gguf::KeyValue* kv = md.find(keys.key("rope.dimension_sections"));
  if (kv == nullptr) throw keys.missing("rope.dimension_sections");
  const auto arr = kv->value.as_array();
  const auto sections = arr ? arr->to_i32() : std::nullopt;
  if (!sections || sections->size() != 4 ||
      std::any_of(sections->begin(), sections->end(), [](int32_t v) { return v < 0; })) {
    throw keys.invalid("rope.dimension_sections", kv->value.describe() + ", expected 4 non-negative integers");
  }
  uint32_t total = 0;
  for (size_t i = 0; i < 4; ++i) total += hp.rope_sections[i] = static_cast<uint32_t>((*sections)[i]);
  if (total == 0 || total > hp.n_rot / 2) {
    throw keys.invalid("rope.dimension_sections", "sums to " + std::to_string(total) + "; expected 1.." +
                                                      std::to_string(hp.n_rot / 2) + " rotary pairs");
  }
  if (hp.n_rot != hp.head_dim_k) {
    throw keys.invalid("rope.dimension_count", std::to_string(hp.n_rot) + " must equal the head size " +
                                                   std::to_string(hp.head_dim_k));
  }
  hp.n_deepstack = keys.u32_or("n_deepstack_layers", 0);
  if (hp.n_deepstack >= hp.n_layer) {
    throw keys.invalid("n_deepstack_layers", std::to_string(hp.n_deepstack) + " of " + std::to_string(hp.n_layer) +
                                                 " blocks");
  }
}

void read_qwen2moe(const Keys& keys, HParams& hp) {
  require_experts(keys, hp);
  hp.n_ff_exp = qwen_expert_ff(keys, hp);
  hp.n_ff_shexp = keys.u32_or("expert_shared_feed_forward_length", hp.n_ff);
  if (hp.n_ff_shexp == 0) throw keys.missing("expert_shared_feed_forward_length");
  hp.expert_weights_norm = false;
  hp.gating = GatingFunc::Softmax;
}

void read_deepseek2(const Keys& keys, HParams& hp) {
  require_experts(keys, hp);
  hp.n_layer_dense_lead = keys.u32_or("leading_dense_block_count", 0);
  hp.q_lora_rank = keys.u32_or("attention.q_lora_rank", 0);
  hp.kv_lora_rank = keys.get_u32("attention.kv_lora_rank");
  hp.head_dim_k_mla = keys.u32_or("attention.key_length_mla", 0);
  hp.head_dim_v_mla = keys.u32_or("attention.value_length_mla", 0);
  if ((hp.head_dim_k_mla == 0) != (hp.head_dim_v_mla == 0)) {
    throw keys.invalid("attention.key_length_mla", "key_length_mla and value_length_mla must be given together");
  }
  hp.n_ff_exp = keys.get_u32("expert_feed_forward_length");
  hp.n_expert_shared = keys.get_u32("expert_shared_count");
  hp.n_ff_shexp = hp.n_ff_exp * hp.n_expert_shared;
  // Older DeepSeek V2/V2.5 GGUFs carry no gating key and use softmax; llama.cpp recognises GLM-4.7 Lite
  // (47 or 48 blocks, a 154880-token vocabulary) as sigmoid.
  const bool glm_lite = (hp.n_layer == 47 || hp.n_layer == 48) && hp.n_vocab == 154880;
  hp.gating = read_gating(keys, glm_lite ? GatingFunc::Sigmoid : GatingFunc::Softmax);
  hp.n_layer_nextn = keys.u32_or("nextn_predict_layers", 0);
  hp.n_expert_groups = keys.u32_or("expert_group_count", 0);
  hp.n_group_used = keys.u32_or("expert_group_used_count", 0);
  const uint32_t head_k = hp.is_mla() ? hp.head_dim_k_mla : hp.head_dim_k;
  if (head_k <= hp.n_rot) {
    throw keys.invalid("rope.dimension_count", std::to_string(hp.n_rot) + " leaves no un-rotated part of the " +
                                                   std::to_string(head_k) + "-wide query/key heads");
  }
}

void read_gpt_oss(const Keys& keys, HParams& hp) {
  require_experts(keys, hp);
  hp.n_ff_exp = keys.get_u32("expert_feed_forward_length");
  hp.sliding_window = keys.get_u32("attention.sliding_window");
  hp.swa_period = keys.u32_or("attention.sliding_window_pattern", 2);
  if (hp.swa_period == 0) throw keys.invalid("attention.sliding_window_pattern", "0");
  hp.rope_freq_base_swa = keys.f32_or("rope.freq_base_swa", hp.rope_freq_base);
  hp.gating = GatingFunc::SoftmaxWeight;
  hp.expert_weights_norm = false;
}

void read_glm4moe(const Keys& keys, HParams& hp) {
  require_experts(keys, hp);
  hp.n_ff_exp = keys.get_u32("expert_feed_forward_length");
  hp.n_expert_shared = keys.get_u32("expert_shared_count");
  hp.n_ff_shexp = hp.n_ff_exp * hp.n_expert_shared;
  hp.n_layer_dense_lead = keys.u32_or("leading_dense_block_count", 0);
  hp.gating = read_gating(keys, GatingFunc::Sigmoid);
  hp.n_layer_nextn = keys.u32_or("nextn_predict_layers", 0);
}

}  // namespace

std::string_view arch_name(Arch arch) {
  for (const auto& a : kArchNames) {
    if (a.arch == arch) return a.name;
  }
  return "unknown";
}

std::optional<Arch> arch_from_name(std::string_view name) {
  for (const auto& a : kArchNames) {
    if (a.name == name) return a.arch;
  }
  return std::nullopt;
}

std::string arch_names() {
  std::string out;
  for (const auto& a : kArchNames) {
    if (!out.empty()) out += ", ";
    out += a.name;
  }
  return out;
}

HParams read_hparams(const gguf::Metadata& md) {
  const auto name = md.find_string("general.architecture");
  if (!name) throw MetadataError(md.file_name() + ": general.architecture: missing; this is not a model file");
  const auto arch = arch_from_name(*name);
  if (!arch) {
    throw MetadataError(md.file_name() + ": general.architecture: \"" + std::string(*name) +
                        "\" is not supported; supported: " + arch_names());
  }
  HParams hp;
  hp.arch = *arch;
  const Keys keys(md, arch_name(*arch));
  read_common(md, keys, hp);
  switch (hp.arch) {
    case Arch::Llama: read_llama(keys, hp); break;
    case Arch::Qwen3Moe: read_qwen3moe(keys, hp); break;
    case Arch::Qwen2Moe: read_qwen2moe(keys, hp); break;
    case Arch::Deepseek2: read_deepseek2(keys, hp); break;
    case Arch::GptOss: read_gpt_oss(keys, hp); break;
    case Arch::Glm4Moe: read_glm4moe(keys, hp); break;
    case Arch::Qwen3VlMoe: read_qwen3vlmoe(md, keys, hp); break;
  }
  if (hp.n_expert_used > hp.n_expert) {
    throw keys.invalid("expert_used_count", std::to_string(hp.n_expert_used) + " is more than expert_count " +
                                                std::to_string(hp.n_expert));
  }
  if (hp.n_expert > 0 && hp.n_expert_used == 0) throw keys.invalid("expert_used_count", "0 with experts present");
  if (hp.n_layer_dense_lead > hp.n_layer) {
    throw keys.invalid("leading_dense_block_count", std::to_string(hp.n_layer_dense_lead) +
                                                        " is more than block_count " + std::to_string(hp.n_layer));
  }
  if (hp.n_layer_nextn >= hp.n_layer) {
    throw keys.invalid("nextn_predict_layers", std::to_string(hp.n_layer_nextn) + " leaves no decoder block of " +
                                                   std::to_string(hp.n_layer));
  }
  if (hp.has_experts() && hp.n_ff_exp == 0) throw keys.missing("expert_feed_forward_length");
  if (hp.n_ff == 0 && (!hp.has_experts() || hp.n_layer_dense_lead > 0)) throw keys.missing("feed_forward_length");
  return hp;
}

}  // namespace strata
