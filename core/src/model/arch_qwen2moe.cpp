// qwen2moe: routed experts plus one shared expert whose output is gated by sigmoid(ffn_gate_inp_shexp . x)
// (llama.cpp's src/models/qwen2moe.cpp loader; there the shared gate and the head are required).
#include "arch_tensors.hpp"

namespace strata::arch_detail {

std::vector<TensorSpec> qwen2moe_tensors(const HParams& hp) {
  TensorList t;
  add_embeddings_and_head(t, hp, Need::Required);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    t.add(il, "attn_norm", "weight", {hp.n_embd});
    add_qkv(t, il, hp.n_embd, hp.n_embd, hp.n_embd_k_gqa(), hp.n_embd_v_gqa());
    t.add(il, "attn_output", "weight", {hp.n_embd, hp.n_embd});
    t.add(il, "ffn_norm", "weight", {hp.n_embd});
    t.add(il, "ffn_gate_inp", "weight", {hp.n_embd, hp.n_expert});
    add_routed_experts(t, il, hp, /*fused_gate_up_allowed=*/false);
    t.add(il, "ffn_gate_inp_shexp", "weight", {hp.n_embd});
    add_shared_experts(t, il, hp);
  }
  return t.take();
}

}  // namespace strata::arch_detail
