// `strata mkmodel`: synthetic GGUF models with llama.cpp's tensor names and keys, any shape, a choice of quant
// mixes, random weights drawn directly in each block format (zero-mean, sized so activations stay finite), an
// optional routing skew, and dense-to-MoE upcycling. Files are streamed to disk by all cores; the model is never
// held in memory.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/format/types.hpp"
#include "strata/hparams.hpp"

namespace strata::mkmodel {

enum class QuantPreset {
  F32,         // every tensor F32
  Q8_0,        // every quantizable weight Q8_0
  Q4_K_M,      // llama.cpp's Q4_K_M recipe (llama_tensor_get_type)
  Q4_K_Q8_0,   // routed experts Q4_K, every other weight Q8_0 (the recipe of the peer figures' file)
  IQ3_S,       // llama.cpp's IQ3_S recipe
  IQ2_XS,      // llama.cpp's IQ2_XS recipe
  UD_Q4_K_XL,  // a mix in the spirit of Unsloth's dynamic Q4_K_XL (see quant_recipe.cpp)
  MXFP4_MOE,   // llama.cpp's MXFP4_MOE: expert stacks MXFP4, every other weight Q8_0 (gpt-oss's published files)
  Q2_K,        // llama.cpp's Q2_K recipe (Q2_K, with Q3_K for ffn_down and attn_output, Q6_K output)
};

struct PresetInfo {
  QuantPreset preset;
  std::string_view name;  // as typed on the command line: "q4_k_m", "ud-q4_k_xl"
  uint32_t file_type;     // general.file_type (llama_ftype)
  std::string_view summary;
};

std::span<const PresetInfo> quant_presets();
const PresetInfo& preset_info(QuantPreset preset);
std::optional<QuantPreset> quant_preset_from_name(std::string_view name);

// A Qwen3-VL vision projector ("mmproj": general.architecture "clip", clip.projector_type "qwen3vl_merger"), with
// the keys and tensors llama.cpp's converter writes (its Qwen3VLVisionModel) and vision::Projector::load reads. Its
// output rows are the text model's n_embd wide per part: [main | one part per deepstack block].
struct ProjectorSpec {
  uint32_t n_block = 0;     // vision blocks (depth)
  uint32_t width = 0;       // vision hidden size (clip.vision.embedding_length)
  uint32_t ffn_width = 0;   // clip.vision.feed_forward_length
  uint32_t n_head = 0;      // width / n_head must be a multiple of 4 (the 2-D RoPE's halves)
  uint32_t patch_size = 0;  // patches of patch_size x patch_size pixels, two temporal kernels
  uint32_t pos_side = 0;    // the learned position table is pos_side x pos_side (num_position_embeddings)
  std::vector<uint32_t> deepstack_blocks;  // the vision blocks followed by a deepstack merger, ascending
  float eps = 1e-6f;        // LayerNorm epsilon (llama.cpp writes the text model's rms_norm_eps)
};

// What to generate. Dimensions follow llama.cpp's keys; for llama with experts, n_ff is each expert's width.
// Architectures: llama, qwen3moe, gpt-oss, glm4moe, deepseek2 (with multi-head latent attention) and qwen3vlmoe
// (Qwen3-VL's text model, with its projector).
struct ModelSpec {
  Arch arch = Arch::Qwen3Moe;
  uint32_t n_layer = 0;   // decoder blocks; block_count is n_layer + n_layer_nextn
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;      // feed_forward_length (dense FFN; qwen3moe and gpt-oss record it although no tensor uses it)
  uint32_t n_ff_exp = 0;  // expert_feed_forward_length (qwen3moe, gpt-oss, glm4moe)
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;  // deepseek2: the query/key head, qk_nope + qk_rope (attention.key_length_mla)
  uint32_t n_expert = 0;  // 0: dense (llama only)
  uint32_t n_expert_used = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-6f;
  float rope_fraction = 1.0f;  // rotated share of each head (glm4moe: partial_rotary_factor 0.5); n_rot = head_dim x it
  float yarn_factor = 0.0f;    // rope.scaling.factor of YaRN scaling (gpt-oss: 32); 0: no rope scaling keys
  uint32_t yarn_orig_ctx = 0;  // rope.scaling.original_context_length (gpt-oss: 4096)
  float yarn_beta_fast = 0.0f;  // rope.scaling.yarn_beta_fast / _slow (deepseek2 shapes); 0: not written
  float yarn_beta_slow = 0.0f;
  float yarn_log_mul = 0.0f;    // rope.scaling.yarn_log_multiplier (deepseek2: 0.1 x mscale_all_dim); 0: not written
  uint32_t sliding_window = 0;  // gpt-oss: attention.sliding_window (every other block, from block 0)
  bool attn_bias = false;       // attn_q/k/v biases (gpt-oss and glm4moe; gpt-oss's attn_output bias always)
  bool qk_norm = false;         // glm4moe: attn_q_norm/attn_k_norm (qwen3moe always has them)
  uint32_t n_expert_shared = 0;     // glm4moe, deepseek2: expert_shared_count (each n_ff_exp wide)
  uint32_t n_layer_dense_lead = 0;  // glm4moe, deepseek2: leading_dense_block_count (n_ff-wide SwiGLU blocks)
  uint32_t n_layer_nextn = 0;       // glm4moe, deepseek2: nextn_predict_layers, MTP blocks after the n_layer
  float expert_weights_scale = 0.0f;  // glm4moe, deepseek2: expert_weights_scale (routed_scaling_factor); 0: none
  bool expert_weights_norm = false;   // glm4moe, deepseek2: expert_weights_norm (norm_topk_prob)
  // deepseek2's multi-head latent attention (llama.cpp's MLA keys; n_head_kv is 1) and group-limited routing.
  uint32_t q_lora_rank = 0;      // attention.q_lora_rank; 0: a plain attn_q
  uint32_t kv_lora_rank = 0;     // attention.kv_lora_rank
  uint32_t qk_rope_dim = 0;      // rotated part of each query/key head (rope.dimension_count)
  uint32_t v_head_dim = 0;       // attention.value_length_mla
  uint32_t n_expert_groups = 0;  // expert_group_count (n_group); 0: not written
  uint32_t n_group_used = 0;     // expert_group_used_count (topk_group)
  // qwen3vlmoe: interleaved M-RoPE pairs per position component (t, row, column, e: rope.dimension_sections) and
  // the deepstack parts of an image row (n_deepstack_layers: added to the residual stream after blocks 0..n-1).
  std::array<uint32_t, 4> rope_sections{};
  uint32_t n_deepstack = 0;
  // The vision projector written beside the model by write_projector (qwen3vlmoe only). Its output width is n_embd
  // and it has n_deepstack deepstack mergers.
  std::optional<ProjectorSpec> projector;
  QuantPreset quant = QuantPreset::Q4_K_M;
  uint64_t seed = 1;
  std::string vocab_file;    // copy the tokenizer of this GGUF; empty: a built-in vocabulary of n_vocab tokens
  double router_skew = 0.0;  // Zipf exponent of expert popularity; 0: routing spread evenly
  std::string name;          // general.name; empty: derived from the shape
};

// The named shapes: "tiny" (any architecture; qwen3vlmoe's with a tiny projector), "qwen3-30b-a3b" and
// "qwen3-235b-a22b" (llama or qwen3moe), "gpt-oss-20b" and "gpt-oss-120b" (gpt-oss only), "glm-4.5-air" and
// "glm-4.6" (glm4moe only), "deepseek-v3" and "kimi-k2" (deepseek2 only), "qwen3-vl-30b-a3b" (qwen3vlmoe only, with
// its projector); nullopt for another name or a shape of another architecture. Each shape carries its default quant
// preset (mxfp4_moe for gpt-oss, q4_k_m otherwise).
std::optional<ModelSpec> shape_preset(std::string_view name, Arch arch);
// The architecture a shape is made for (gpt-oss-20b: gpt-oss, deepseek-v3: deepseek2, qwen3-vl-30b-a3b:
// qwen3vlmoe); nullopt for tiny and the qwen3 shapes.
std::optional<Arch> shape_arch(std::string_view name);
std::string shape_names();

// Cuts (or extends) a spec to n decoder blocks, as `--layers N` does: glm4moe and deepseek2 keep their nextn (MTP)
// blocks after the n, and at most n - 1 of their leading dense blocks, so that every cut keeps at least one MoE
// decoder block.
void set_layers(ModelSpec& spec, uint32_t n);

// One tensor of the planned file.
struct PlannedTensor {
  std::string name;
  format::GgmlType type;
  std::vector<uint64_t> ne;
  uint64_t n_bytes;
};

using ProgressFn = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

struct WriteOptions {
  unsigned threads = 0;               // 0: every core
  uint64_t chunk_bytes = 8ull << 20;  // work unit of a thread; peak memory is about threads x chunk_bytes
  ProgressFn progress;                // called from worker threads after each chunk
};

struct RouterReport {
  std::vector<double> target;    // wanted share of tokens routed to the expert of each popularity rank
  std::vector<double> achieved;  // measured on fresh Gaussian hidden states
};

struct WriteStats {
  uint64_t file_bytes = 0;
  size_t tensors = 0;
  double seconds = 0;
  std::optional<RouterReport> router;  // when a skew was asked for
};

// The hyperparameters the file will carry, its tensors with their types, and the file's size.
struct Plan {
  HParams hparams;
  std::vector<PlannedTensor> tensors;
  uint64_t file_bytes = 0;
};

// Checks the spec (strata::Error naming the field and the fix) and lays out the file without writing it.
Plan plan_model(const ModelSpec& spec);
WriteStats write_model(const ModelSpec& spec, const std::string& path, const WriteOptions& options);

// The vision projector of a spec with one (spec.projector): its tensors and size, or the file. Matrices and patch
// kernels are F16 and the rest F32, as llama.cpp's converter writes an mmproj with its default --outtype f16; every
// tensor is F32 when spec.quant is F32. Random weights as write_model draws them (unit-gain matrices, LayerNorm
// weights 1, small biases), from spec.seed. strata::Error for a spec without a projector or an inconsistent one.
struct ProjectorPlan {
  std::vector<PlannedTensor> tensors;
  uint64_t file_bytes = 0;
};
ProjectorPlan plan_projector(const ModelSpec& spec);
WriteStats write_projector(const ModelSpec& spec, const std::string& path, const WriteOptions& options);

// A Mixtral-style llama MoE from a dense llama GGUF: every key and tensor copied byte for byte, plus
// llama.expert_count/expert_used_count; each block's ffn_gate/up/down become ffn_{gate,up,down}_exps holding
// n_expert copies of the dense bytes, and a seeded random router ffn_gate_inp (F32). llama.cpp renormalizes the
// top-k weights of llama models, so the output equals the dense model's.
struct UpcycleSpec {
  std::string dense_path;
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint64_t seed = 1;
};
WriteStats upcycle(const UpcycleSpec& spec, const std::string& path, const WriteOptions& options);

}  // namespace strata::mkmodel
