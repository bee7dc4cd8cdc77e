// deepseek2 (DeepSeek V2/V3, Kimi K2, GLM-4.7 Lite): multi-head latent attention, leading dense blocks, routed
// plus shared experts, optional routing bias, optional trailing MTP blocks (llama.cpp's src/models/deepseek2.cpp).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> deepseek2_tensors(const HParams& hp) {
  // Head sizes as the graph sees them: MLA files store the decompressed sizes under *_mla keys.
  const uint64_t head_k = hp.is_mla() ? hp.head_dim_k_mla : hp.head_dim_k;
  const uint64_t head_v = hp.is_mla() ? hp.head_dim_v_mla : hp.head_dim_v;
  const uint64_t qk_rope = hp.n_rot;
  const uint64_t qk_nope = head_k - qk_rope;
  const uint64_t n_head = hp.n_head;

  TensorList t;
  add_embeddings_and_head(t, hp, Need::Optional);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    // llama.cpp loads MTP blocks only when the file has them.
    const Need need = il < hp.n_layer_main() ? Need::Required : Need::Optional;
    t.add(il, "attn_norm", "weight", {hp.n_embd}, need);
    if (hp.q_lora_rank > 0) t.add(il, "attn_q_a_norm", "weight", {hp.q_lora_rank}, need);
    t.add(il, "attn_kv_a_norm", "weight", {hp.kv_lora_rank}, need);
    if (hp.q_lora_rank > 0) {
      t.add(il, "attn_q_a", "weight", {hp.n_embd, hp.q_lora_rank}, need);
      t.add(il, "attn_q_b", "weight", {hp.q_lora_rank, n_head * head_k}, need);
    } else {
      t.add(il, "attn_q", "weight", {hp.n_embd, n_head * head_k}, need);
    }
    t.add(il, "attn_kv_a_mqa", "weight", {hp.n_embd, hp.kv_lora_rank + qk_rope}, need);
    if (hp.is_mla()) {
      t.add(il, "attn_k_b", "weight", {qk_nope, hp.kv_lora_rank, n_head}, need);
      t.add(il, "attn_v_b", "weight", {hp.kv_lora_rank, head_v, n_head}, need);
    } else {
      t.add(il, "attn_kv_b", "weight", {hp.kv_lora_rank, n_head * (qk_nope + head_v)}, need);
    }
    t.add(il, "attn_output", "weight", {n_head * head_v, hp.n_embd}, need);
    t.add(il, "ffn_norm", "weight", {hp.n_embd}, need);
    if (!hp.layer_has_experts(il)) {
      t.add(il, "ffn_gate", "weight", {hp.n_embd, hp.n_ff}, need);
      t.add(il, "ffn_down", "weight", {hp.n_ff, hp.n_embd}, need);
      t.add(il, "ffn_up", "weight", {hp.n_embd, hp.n_ff}, need);
    } else {
      t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert}, need);
      t.add(il, "exp_probs_b", "bias", {hp.n_expert}, Need::Optional);
      if (need == Need::Required) {
        add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/true);
        add_shared_experts(t, il, hp);
      } else {
        t.add(il, "ffn_down_exps", "weight", {hp.n_ff_exp, hp.n_embd, hp.n_expert}, need);
        t.add(il, "ffn_gate_exps", "weight", {hp.n_embd, hp.n_ff_exp, hp.n_expert}, need);
        t.add(il, "ffn_up_exps", "weight", {hp.n_embd, hp.n_ff_exp, hp.n_expert}, need);
        t.add(il, "ffn_gate_shexp", "weight", {hp.n_embd, hp.n_ff_shexp}, need);
        t.add(il, "ffn_down_shexp", "weight", {hp.n_ff_shexp, hp.n_embd}, need);
        t.add(il, "ffn_up_shexp", "weight", {hp.n_embd, hp.n_ff_shexp}, need);
      }
    }
    if (il >= hp.n_layer_main()) add_nextn(t, il, hp, Need::Optional);
  }
  return t.take();
}

}  // namespace strata::arch_detail
