// gpt-oss: attention with per-head sinks and biases, alternating sliding-window layers, routed experts with
// biases, weights softmaxed over the chosen experts (llama.cpp's src/models/openai-moe.cpp loader).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> gpt_oss_tensors(const HParams& hp) {
  // gpt-oss sizes its heads by the rotary dimension.
  const uint64_t head = hp.n_rot;
  const uint64_t n_q = hp.n_head * head, n_kv = hp.n_head_kv * head;
  TensorList t;
  add_embeddings_and_head(t, hp, Need::Required);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    t.add(il, "attn_norm", "weight", {hp.n_embd});
    t.add(il, "post_attention_norm", "weight", {hp.n_embd});
    add_qkv(t, il, hp.n_embd, n_q, n_kv, n_kv);
    t.add(il, "attn_output", "weight", {n_q, hp.n_embd});
    t.add(il, "attn_sinks", "weight", {hp.n_head});
    t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert});
    add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/false);
    t.add(il, "attn_output", "bias", {hp.n_embd});
    t.add(il, "ffn_gate_inp", "bias", {hp.n_expert});
    t.add(il, "ffn_gate_exps", "bias", {hp.n_ff_exp, hp.n_expert});
    t.add(il, "ffn_down_exps", "bias", {hp.n_embd, hp.n_expert});
    t.add(il, "ffn_up_exps", "bias", {hp.n_ff_exp, hp.n_expert});
  }
  return t.take();
}

}  // namespace strata::arch_detail
