// A model's hyperparameters, read once from GGUF metadata into one typed struct. Key names and defaults are
// llama.cpp's (src/llama-arch.cpp names the keys `<arch>.<field>`; src/llama-model.cpp and the per-architecture
// loaders give the defaults), so a GGUF that llama.cpp loads reads the same here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "strata/gguf.hpp"

namespace strata {

enum class Arch { Llama, Qwen3Moe, Qwen2Moe, Deepseek2, GptOss, Glm4Moe, Qwen3VlMoe };

// The `general.architecture` string: "llama", "qwen3moe", "qwen2moe", "deepseek2", "gpt-oss", "glm4moe".
std::string_view arch_name(Arch arch);
std::optional<Arch> arch_from_name(std::string_view name);
// "llama, qwen3moe, ..." for messages.
std::string arch_names();

// How router logits become expert weights; the numbers are what `<arch>.expert_gating_func` stores.
enum class GatingFunc : uint32_t {
  Softmax = 1,        // softmax over all logits, then top-k
  Sigmoid = 2,        // sigmoid per logit (DeepSeek-V3, GLM-4.5)
  SoftmaxWeight = 3,  // top-k on the logits, softmax over the k chosen (gpt-oss)
};

enum class RopeScaling { None, Linear, Yarn, LongRope };

struct HParams {
  Arch arch = Arch::Llama;

  uint32_t n_layer = 0;        // block_count, including trailing next-token-prediction (MTP) blocks
  uint32_t n_layer_nextn = 0;  // nextn_predict_layers: MTP blocks at the end, unused for plain decoding
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;  // feed_forward_length: dense FFN width (llama with experts: each expert's width)
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim_k = 0;  // attention.key_length, default n_embd / n_head
  uint32_t head_dim_v = 0;  // attention.value_length, default n_embd / n_head
  uint32_t n_rot = 0;       // rope.dimension_count, default head_dim_k
  uint32_t n_ctx_train = 0;
  uint32_t n_vocab = 0;  // <arch>.vocab_size, else the length of tokenizer.ggml.tokens
  float rms_eps = 0.0f;

  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor
  RopeScaling rope_scaling = RopeScaling::Linear;
  float rope_attn_factor = 1.0f;
  uint32_t rope_orig_ctx = 0;  // rope.scaling.original_context_length, default n_ctx_train
  float yarn_log_mul = 0.0f;   // as stored (deepseek2's graph divides it by 0.1 again)
  float yarn_ext_factor = -1.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;

  uint32_t n_expert = 0;  // 0: dense
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;  // width of one routed expert
  uint32_t n_expert_shared = 0;
  uint32_t n_ff_shexp = 0;  // width of the shared expert FFN (all shared experts together)
  uint32_t n_layer_dense_lead = 0;
  bool expert_weights_norm = false;   // renormalize the k chosen weights to sum to 1
  float expert_weights_scale = 1.0f;  // multiplies the chosen weights (a stored 0 means 1)
  GatingFunc gating = GatingFunc::Softmax;
  uint32_t n_expert_groups = 0, n_group_used = 0;  // DeepSeek-V3's group-limited routing (0: none)

  // DeepSeek-style multi-head latent attention.
  uint32_t q_lora_rank = 0;     // 0: a plain attn_q
  uint32_t kv_lora_rank = 0;
  uint32_t head_dim_k_mla = 0;  // attention.key_length_mla (0 in older GGUFs: then head_dim_k)
  uint32_t head_dim_v_mla = 0;

  // Qwen3-VL (qwen3vlmoe): interleaved M-RoPE over (t, row, column, e) with these pair counts, and the layers after
  // which an image token's deepstack parts are added to the residual stream.
  std::array<uint32_t, 4> rope_sections{};
  uint32_t n_deepstack = 0;

  // Sliding-window attention (gpt-oss): every swa_period-th layer (the last of each period) attends fully.
  uint32_t sliding_window = 0;
  uint32_t swa_period = 0;
  float rope_freq_base_swa = 10000.0f;

  uint32_t n_layer_main() const { return n_layer - n_layer_nextn; }
  bool has_experts() const { return n_expert > 0; }
  // Whether block il routes to experts (dense leading blocks of deepseek2/glm4moe do not).
  bool layer_has_experts(uint32_t il) const { return n_expert > 0 && il >= n_layer_dense_lead; }
  bool layer_is_swa(uint32_t il) const { return swa_period > 0 && il % swa_period < swa_period - 1; }
  uint32_t n_embd_q() const { return n_head * head_dim_k; }
  uint32_t n_embd_k_gqa() const { return n_head_kv * head_dim_k; }
  uint32_t n_embd_v_gqa() const { return n_head_kv * head_dim_v; }
  // DeepSeek2: MLA with split k_b/v_b tensors (newer GGUFs) rather than one kv_b.
  bool is_mla() const { return head_dim_k_mla != 0 && head_dim_v_mla != 0; }
};

// Reads `general.architecture` and the architecture's keys. Throws gguf::MetadataError naming the key that is
// missing, of the wrong type or out of range ("qwen3moe.expert_count: missing; a qwen3moe model needs it").
HParams read_hparams(const gguf::Metadata& metadata);

}  // namespace strata
