// glm4moe (GLM-4.5/4.6): attention with biases and optional q/k norms, leading dense blocks, routed experts with a
// routing bias and sigmoid gating, shared experts, trailing MTP blocks that the file must carry even though plain
// decoding skips them (llama.cpp's src/models/glm4-moe.cpp loader).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> glm4moe_tensors(const HParams& hp) {
  TensorList t;
  add_embeddings_and_head(t, hp, Need::Optional);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    t.add(il, "attn_norm", "weight", {hp.n_embd});
    add_qkv(t, il, hp.n_embd, hp.n_embd_q(), hp.n_embd_k_gqa(), hp.n_embd_v_gqa());
    t.add(il, "attn_output", "weight", {hp.n_embd_q(), hp.n_embd});
    t.add(il, "attn_q_norm", "weight", {hp.head_dim_k}, Need::Optional);
    t.add(il, "attn_k_norm", "weight", {hp.head_dim_k}, Need::Optional);
    t.add(il, "post_attention_norm", "weight", {hp.n_embd});
    if (hp.layer_has_experts(il)) {
      t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert});
      t.add(il, "exp_probs_b", "bias", {hp.n_expert});
      add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/false);
      if (hp.n_expert_shared > 0) add_shared_experts(t, il, hp);
    } else {
      add_dense_ffn(t, il, hp.n_embd, hp.n_ff);
    }
    if (il >= hp.n_layer_main()) add_nextn(t, il, hp, Need::Required);
  }
  return t.take();
}

}  // namespace strata::arch_detail
