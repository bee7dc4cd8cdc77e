// qwen3moe: grouped-query attention with per-head RMS norms on q and k, routed experts only
// (llama.cpp's src/models/qwen3moe.cpp loader).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> qwen3moe_tensors(const HParams& hp) {
  TensorList t;
  add_embeddings_and_head(t, hp, Need::Optional);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    t.add(il, "attn_norm", "weight", {hp.n_embd});
    add_qkv(t, il, hp.n_embd, hp.n_embd_q(), hp.n_embd_k_gqa(), hp.n_embd_v_gqa());
    t.add(il, "attn_output", "weight", {hp.n_embd_q(), hp.n_embd});
    t.add(il, "attn_k_norm", "weight", {hp.head_dim_k});
    t.add(il, "attn_q_norm", "weight", {hp.head_dim_k});
    t.add(il, "ffn_norm", "weight", {hp.n_embd});
    t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert});
    add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/false);
  }
  return t.take();
}

}  // namespace strata::arch_detail
