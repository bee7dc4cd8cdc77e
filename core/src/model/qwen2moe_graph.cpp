// qwen2moe (Qwen1.5-MoE, Qwen2-57B-A14B): attention with q/k/v biases and neox RoPE, then routed experts (softmax
// over all experts, top-k, the weights not renormalised) plus one shared expert weighted by
// sigmoid(ffn_gate_inp_shexp . x), added after the routed sum (llama.cpp's src/models/qwen2moe.cpp).

#include "graph.hpp"

namespace strata {
namespace {

class Qwen2MoeGraph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      LayerWeights& lw = w.layers[il];
      graph::bind_attention(file, il, lw.attn);
      lw.attn_spec = graph::attention_spec(hp, /*rope_mode=*/2);
      lw.ffn_norm = graph::need(file, il, "ffn_norm");
      graph::bind_routed_experts(file, hp, il, lw);
      graph::bind_shared_experts(file, il, lw);
      lw.shared.gate_inp = graph::need(file, il, "ffn_gate_inp_shexp");
    }
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_qwen2moe_graph() { return std::make_unique<Qwen2MoeGraph>(); }

}  // namespace strata
