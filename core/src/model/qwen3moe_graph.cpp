// qwen3moe: grouped-query attention with per-head RMS norms on q and k before RoPE on the halves (neox, mode 2),
// then routed experts only (softmax over all experts, top-k, the k weights renormalised).
// qwen3vlmoe (Qwen3-VL MoE) is the same text model with interleaved M-RoPE (ROPE mode 40 over the file's sections;
// a text token's four position components are (p, p, p, 0)); its deepstack inputs come with images, which are not
// read yet, so a text prompt adds none (llama.cpp adds zeros for text tokens).

#include "graph.hpp"

namespace strata {
namespace {

class Qwen3MoeGraph final : public Model::Graph {
 public:
  explicit Qwen3MoeGraph(bool mrope) : mrope_(mrope) {}

  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      LayerWeights& lw = w.layers[il];
      graph::bind_attention(file, il, lw.attn);
      lw.attn.q_norm = graph::need(file, il, "attn_q_norm");  // qwen3moe's per-head norms are not optional
      lw.attn.k_norm = graph::need(file, il, "attn_k_norm");
      lw.attn_spec = graph::attention_spec(hp, /*rope_mode=*/mrope_ ? 40 : 2);
      if (mrope_) lw.attn_spec.rope_sections = hp.rope_sections;
      lw.ffn_norm = graph::need(file, il, "ffn_norm");
      graph::bind_routed_experts(file, hp, il, lw);
    }
  }

 private:
  bool mrope_;
};

}  // namespace

std::unique_ptr<Model::Graph> make_qwen3moe_graph() { return std::make_unique<Qwen3MoeGraph>(false); }
std::unique_ptr<Model::Graph> make_qwen3vlmoe_graph() { return std::make_unique<Qwen3MoeGraph>(true); }

}  // namespace strata
