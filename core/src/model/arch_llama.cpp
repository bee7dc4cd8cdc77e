// llama: dense, or Mixtral-style with routed experts as wide as feed_forward_length (llama.cpp's
// src/models/llama.cpp loader).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> llama_tensors(const HParams& hp) {
  TensorList t;
  add_embeddings_and_head(t, hp, Need::Optional);
  // Llama 3's rope frequency factors: one tensor, shared by every block.
  t.add("rope_freqs.weight", {hp.n_rot / 2}, Need::Optional);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    t.add(il, "attn_norm", "weight", {hp.n_embd});
    add_qkv(t, il, hp.n_embd, hp.n_embd_q(), hp.n_embd_k_gqa(), hp.n_embd_v_gqa());
    t.add(il, "attn_output", "weight", {hp.n_embd_q(), hp.n_embd});
    t.add(il, "attn_output", "bias", {hp.n_embd}, Need::Optional);
    t.add(il, "ffn_norm", "weight", {hp.n_embd});
    if (!hp.has_experts()) {
      add_dense_ffn(t, il, hp.n_embd, hp.n_ff);
      t.add(il, "ffn_gate", "bias", {hp.n_ff}, Need::Optional);
      t.add(il, "ffn_down", "bias", {hp.n_embd}, Need::Optional);
      t.add(il, "ffn_up", "bias", {hp.n_ff}, Need::Optional);
      continue;
    }
    t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert});
    add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/false);
    // Granite MoE's shared expert, when the file declares its width.
    if (hp.n_ff_shexp > 0) add_shared_experts(t, il, hp);
  }
  return t.take();
}

}  // namespace strata::arch_detail
