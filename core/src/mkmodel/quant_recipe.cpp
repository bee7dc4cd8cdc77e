#include "quant_recipe.hpp"

#include <array>
#include <string>

#include "strata/error.hpp"
#include "strata/tensor_role.hpp"

namespace strata::mkmodel {
namespace {

using format::GgmlType;

constexpr std::array<PresetInfo, 9> kPresets = {{
    {QuantPreset::F32, "f32", 0, "every tensor F32"},
    {QuantPreset::Q8_0, "q8_0", 7, "every weight Q8_0; norms and router F32"},
    {QuantPreset::Q4_K_M, "q4_k_m", 15,
     "llama.cpp's Q4_K_M: Q4_K, with Q6_K for output and for attn_v/ffn_down on llama.cpp's 'more bits' layers"},
    {QuantPreset::Q4_K_Q8_0, "q4_k_q8_0", 15,
     "routed experts Q4_K; attention, embeddings, output and dense FFN Q8_0; router and norms F32"},
    {QuantPreset::IQ3_S, "iq3_s", 26, "llama.cpp's IQ3_S: IQ3_S, output Q6_K, attn_v Q4_K when n_head/n_head_kv >= 4"},
    {QuantPreset::IQ2_XS, "iq2_xs", 20,
     "llama.cpp's IQ2_XS: IQ2_XS, token_embd Q2_K, output Q5_K, attn_v Q4_K, ffn_down Q2_K on the first 1/8 of "
     "layers"},
    {QuantPreset::UD_Q4_K_XL, "ud-q4_k_xl", 15,
     "attention Q8_0; expert gate/up Q4_K; expert down Q5_K (Q6_K on the 'more bits' layers); token_embd Q4_K; "
     "output Q6_K"},
    {QuantPreset::MXFP4_MOE, "mxfp4_moe", 38,
     "llama.cpp's MXFP4_MOE (gpt-oss's published files): expert stacks MXFP4; every other weight, embeddings and "
     "output included, Q8_0; router, norms, biases and sinks F32"},
    {QuantPreset::Q2_K, "q2_k", 10,
     "llama.cpp's Q2_K: Q2_K, with Q3_K for ffn_down and attn_output (Q5_K beside 8 experts), Q6_K output, attn_v "
     "Q4_K when n_head/n_head_kv >= 4 (else Q3_K)"},
}};

// llama.cpp's tensor categories (by name, in its order of tests).
enum class Category { TokenEmbd, Output, AttnQ, AttnK, AttnV, AttnOutput, FfnGate, FfnUp, FfnDown, Other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight") return Category::TokenEmbd;
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") || contains(name, "attn_v.weight")) {
    return Category::AttnV;
  }
  if (contains(name, "attn_k.weight")) return Category::AttnK;
  if (contains(name, "attn_q.weight")) return Category::AttnQ;
  if (contains(name, "attn_output.weight")) return Category::AttnOutput;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

// llama.cpp quantizes only 2-D and 3-D weights, never norms or the expert router.
bool quantizable(const TensorSpec& t) {
  return t.ne.size() >= 2 && t.name.ends_with("weight") && !contains(t.name, "_norm.weight") &&
         !contains(t.name, "ffn_gate_inp.weight");
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third one between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Counters {
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int i_ffn_down = 0;
  int n_layer = 0;
};

int layer_of(const TensorSpec& t) { return classify_tensor(t.name).layer.value_or(0); }

GgmlType q4_k_m(Category c, const TensorSpec& t, const HParams& hp, Counters& k) {
  switch (c) {
    case Category::Output: return GgmlType::Q6_K;
    case Category::AttnV: {
      GgmlType type = use_more_bits(k.i_attention_wv, k.n_attention_wv) ? GgmlType::Q6_K : GgmlType::Q4_K;
      if (hp.n_expert == 8) type = GgmlType::Q8_0;
      ++k.i_attention_wv;
      return type;
    }
    case Category::AttnK: return hp.n_expert == 8 ? GgmlType::Q8_0 : GgmlType::Q4_K;
    case Category::FfnDown: {
      // With experts llama.cpp takes the layer from the name; without, it counts ffn_down tensors (the same
      // thing for one ffn_down per block).
      const int layer = hp.n_expert > 1 ? layer_of(t) : k.i_ffn_down;
      ++k.i_ffn_down;
      return use_more_bits(layer, k.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
    }
    case Category::AttnOutput: return hp.n_expert == 8 ? GgmlType::Q5_K : GgmlType::Q4_K;
    default: return GgmlType::Q4_K;
  }
}

GgmlType iq3_s(Category c, const HParams& hp, Counters& k) {
  const uint32_t n_gqa = hp.n_head / hp.n_head_kv;
  switch (c) {
    case Category::Output: return GgmlType::Q6_K;
    case Category::AttnV: {
      ++k.i_attention_wv;
      if (hp.n_expert == 8) return GgmlType::Q8_0;
      return n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::IQ3_S;
    }
    case Category::AttnK: return hp.n_expert == 8 ? GgmlType::Q8_0 : GgmlType::IQ3_S;
    case Category::AttnOutput: return hp.n_expert == 8 ? GgmlType::Q5_K : GgmlType::IQ3_S;
    default: return GgmlType::IQ3_S;
  }
}

GgmlType iq2_xs(Category c, const HParams& hp, Counters& k) {
  const uint32_t n_gqa = hp.n_head / hp.n_head_kv;
  switch (c) {
    case Category::Output: return GgmlType::Q5_K;
    case Category::TokenEmbd: return GgmlType::Q2_K;
    case Category::AttnV:
      ++k.i_attention_wv;
      return n_gqa >= 4 || hp.n_expert >= 4 ? GgmlType::Q4_K : GgmlType::Q2_K;
    case Category::AttnK: return hp.n_expert == 8 ? GgmlType::Q4_K : GgmlType::IQ2_XS;
    case Category::FfnDown: {
      const bool early = k.i_ffn_down < k.n_layer / 8;
      ++k.i_ffn_down;
      return early ? GgmlType::Q2_K : GgmlType::IQ2_XS;
    }
    case Category::AttnOutput: return hp.n_expert == 8 ? GgmlType::Q5_K : GgmlType::IQ2_XS;
    default: return GgmlType::IQ2_XS;
  }
}

// llama.cpp's LLAMA_FTYPE_MOSTLY_Q2_K: Q2_K by default; Q6_K output; attn_v-like tensors (attn_v, attn_qkv,
// attn_kv_b) Q4_K with n_head/n_head_kv >= 4 and Q3_K otherwise, Q8_0 beside 8 experts (attn_k too); every
// ffn_down Q3_K; attn_output Q5_K beside 8 experts, Q3_K otherwise.
GgmlType q2_k(Category c, const HParams& hp, Counters& k) {
  const uint32_t n_gqa = hp.n_head / hp.n_head_kv;
  switch (c) {
    case Category::Output: return GgmlType::Q6_K;
    case Category::AttnV:
      ++k.i_attention_wv;
      if (hp.n_expert == 8) return GgmlType::Q8_0;
      return n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
    case Category::AttnK: return hp.n_expert == 8 ? GgmlType::Q8_0 : GgmlType::Q2_K;
    case Category::FfnDown: return GgmlType::Q3_K;
    case Category::AttnOutput: return hp.n_expert == 8 ? GgmlType::Q5_K : GgmlType::Q3_K;
    default: return GgmlType::Q2_K;
  }
}

bool routed_expert(const TensorSpec& t) { return contains(t.name, "_exps."); }

// llama.cpp's LLAMA_FTYPE_MOSTLY_MXFP4_MOE: the output Q8_0, then every tensor with a third dimension above 1 (the
// expert stacks) MXFP4 and every other quantized one Q8_0.
GgmlType mxfp4_moe(Category c, const TensorSpec& t) {
  if (c == Category::Output) return GgmlType::Q8_0;
  return t.ne.size() >= 3 && t.ne[2] > 1 ? GgmlType::MXFP4 : GgmlType::Q8_0;
}

GgmlType q4_k_q8_0(const TensorSpec& t) { return routed_expert(t) ? GgmlType::Q4_K : GgmlType::Q8_0; }

GgmlType ud_q4_k_xl(Category c, const TensorSpec& t, Counters& k) {
  switch (c) {
    case Category::Output: return GgmlType::Q6_K;
    case Category::TokenEmbd: return GgmlType::Q4_K;
    case Category::AttnQ:
    case Category::AttnK:
    case Category::AttnV:
    case Category::AttnOutput: return GgmlType::Q8_0;
    case Category::FfnDown:
      if (!routed_expert(t)) return GgmlType::Q6_K;
      return use_more_bits(layer_of(t), k.n_layer) ? GgmlType::Q6_K : GgmlType::Q5_K;
    default: return GgmlType::Q4_K;
  }
}

}  // namespace

std::span<const PresetInfo> quant_presets() { return kPresets; }

const PresetInfo& preset_info(QuantPreset preset) {
  for (const auto& p : kPresets) {
    if (p.preset == preset) return p;
  }
  return kPresets[0];
}

std::optional<QuantPreset> quant_preset_from_name(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return p.preset;
  }
  return std::nullopt;
}

GgmlType fallback_type(GgmlType type, uint64_t ne0) {
  if (ne0 % format::traits(type).block_elems == 0) return type;
  GgmlType next;
  switch (type) {
    case GgmlType::IQ2_XS:
    case GgmlType::IQ3_S: next = GgmlType::IQ4_NL; break;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K: next = GgmlType::Q4_0; break;
    case GgmlType::Q4_K: next = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: next = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: next = GgmlType::Q8_0; break;
    default: next = GgmlType::F16; break;
  }
  return ne0 % format::traits(next).block_elems == 0 ? next : GgmlType::F16;
}

std::vector<GgmlType> choose_types(QuantPreset preset, const HParams& hp, const std::vector<TensorSpec>& tensors) {
  Counters k;
  k.n_layer = static_cast<int>(hp.n_layer);
  for (const TensorSpec& t : tensors) {
    if (category_of(t.name) == Category::AttnV) ++k.n_attention_wv;
  }
  std::vector<GgmlType> types;
  types.reserve(tensors.size());
  for (const TensorSpec& t : tensors) {
    if (preset == QuantPreset::F32 || !quantizable(t)) {
      types.push_back(GgmlType::F32);
      continue;
    }
    const Category c = category_of(t.name);
    GgmlType type = GgmlType::F32;
    switch (preset) {
      case QuantPreset::F32: break;
      case QuantPreset::Q8_0: type = GgmlType::Q8_0; break;
      case QuantPreset::Q4_K_M: type = q4_k_m(c, t, hp, k); break;
      case QuantPreset::Q4_K_Q8_0: type = q4_k_q8_0(t); break;
      case QuantPreset::IQ3_S: type = iq3_s(c, hp, k); break;
      case QuantPreset::IQ2_XS: type = iq2_xs(c, hp, k); break;
      case QuantPreset::UD_Q4_K_XL: type = ud_q4_k_xl(c, t, k); break;
      case QuantPreset::MXFP4_MOE: type = mxfp4_moe(c, t); break;
      case QuantPreset::Q2_K: type = q2_k(c, hp, k); break;
    }
    // llama.cpp keeps an output row that K-quant blocks do not divide at Q8_0.
    if (c == Category::Output && t.ne[0] % format::traits(type).block_elems != 0) type = GgmlType::Q8_0;
    types.push_back(fallback_type(type, t.ne[0]));
  }
  return types;
}

}  // namespace strata::mkmodel
