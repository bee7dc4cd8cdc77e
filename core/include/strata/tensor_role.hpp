// What a tensor is for, from its llama.cpp name ("blk.3.ffn_down_exps.weight" -> routed experts of layer 3).
// Used to account bytes by part (inspect, the expert cache) and to check architectures.
#pragma once

#include <optional>
#include <string_view>

namespace strata {

enum class TensorPart {
  Embeddings,     // token_embd
  Attention,      // attn_q/k/v/output (+ biases), attn_q_a/b, attn_kv_a/b (MLA), attn_sinks
  Norm,           // every norm weight (attn_norm, ffn_norm, attn_q_norm, output_norm, ...)
  Router,         // ffn_gate_inp (+ exp_probs_b correction bias)
  SharedExperts,  // ffn_*_shexp, ffn_gate_inp_shexp
  RoutedExperts,  // ffn_gate/up/down(_gate_up)_exps (+ their biases)
  DenseFfn,       // ffn_gate/up/down of dense layers
  Head,           // output
  Other,          // anything else (rope_freqs, ...)
};

constexpr int kTensorPartCount = 9;

std::string_view part_name(TensorPart part);  // "embeddings", "attention", ..., "routed experts"

struct TensorRole {
  TensorPart part;
  std::optional<int> layer;  // blk.N, when the tensor belongs to a layer
};

TensorRole classify_tensor(std::string_view name);

}  // namespace strata
