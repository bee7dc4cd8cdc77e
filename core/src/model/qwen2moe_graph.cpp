// qwen2moe (Qwen1.5-MoE, Qwen2-57B-A14B): attention with q/k/v biases and neox RoPE, then routed experts (softmax
// over all experts, top-k, the weights not renormalised) plus one shared expert weighted by
// sigmoid(ffn_gate_inp_shexp . x), added after the routed sum (llama.cpp's src/models/qwen2moe.cpp).
#include <cmath>
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"

namespace strata {
namespace {

class Qwen2MoeGraph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      LayerWeights& lw = w.layers[il];
      if (graph::maybe(file, il, "attn_qkv") != nullptr) {
        throw Error(file.name() + ": blk." + std::to_string(il) +
                    ".attn_qkv.weight: fused q/k/v projections are not supported yet");
      }
      AttentionWeights& a = lw.attn;
      a.norm = graph::need(file, il, "attn_norm");
      a.q = graph::need(file, il, "attn_q");
      a.k = graph::need(file, il, "attn_k");
      a.v = graph::need(file, il, "attn_v");
      a.o = graph::need(file, il, "attn_output");
      a.q_bias = graph::maybe(file, il, "attn_q", "bias");
      a.k_bias = graph::maybe(file, il, "attn_k", "bias");
      a.v_bias = graph::maybe(file, il, "attn_v", "bias");
      lw.attn_spec = {hp.n_head,
                      hp.n_head_kv,
                      hp.head_dim_k,
                      1.0f / std::sqrt(static_cast<float>(hp.head_dim_k)),
                      /*rope_mode=*/2,
                      hp.n_rot,
                      hp.rope_freq_base,
                      hp.rope_freq_scale,
                      0};
      lw.ffn_norm = graph::need(file, il, "ffn_norm");
      graph::bind_routed_experts(file, hp, il, lw);
      lw.shared.gate = graph::need(file, il, "ffn_gate_shexp");
      lw.shared.up = graph::need(file, il, "ffn_up_shexp");
      lw.shared.down = graph::need(file, il, "ffn_down_shexp");
      lw.shared.gate_inp = graph::need(file, il, "ffn_gate_inp_shexp");
    }
  }

  void emit_layer(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) const override {
    graph::emit_attention(il, lw, ctx, out);
    graph::emit_moe_ffn(il, lw, ctx, out);
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_qwen2moe_graph() { return std::make_unique<Qwen2MoeGraph>(); }

}  // namespace strata
