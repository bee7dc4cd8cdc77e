// glm4moe (GLM-4.5/4.6): attention with q/k/v biases and optional per-head q/k norms, NeoX RoPE on the first n_rot
// dims of each head (partial rotary: the rest pass through), post_attention_norm as the FFN's norm; leading dense
// blocks (a SwiGLU FFN), then MoE blocks: sigmoid router whose choice adds the exp_probs_b bias (the weights are the
// unbiased sigmoids, renormalised and scaled by expert_weights_scale), the routed experts, plus the shared expert
// added after the routed sum (llama.cpp's src/models/glm4-moe.cpp). The trailing nextn_predict_layers blocks are
// MTP (next-token prediction) blocks: checked by the arch list, bound to nothing and skipped by plain decoding
// (kept in the file for speculative drafts later).
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"

namespace strata {
namespace {

class Glm4MoeGraph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    // llama.cpp turns M-RoPE (multimodal sections) on when this key is present; the ROPE op has no sections.
    if (file.metadata().find("glm4moe.rope.dimension_sections") != nullptr) {
      throw Error(file.name() + ": glm4moe.rope.dimension_sections (multimodal M-RoPE) is not supported yet");
    }
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer_main(); ++il) {
      LayerWeights& lw = w.layers[il];
      graph::bind_attention(file, il, lw.attn);
      lw.attn_spec = graph::attention_spec(hp, /*rope_mode=*/2);
      lw.ffn_norm = graph::need(file, il, "post_attention_norm");
      if (!hp.layer_has_experts(il)) {
        graph::bind_dense_ffn(file, il, lw);
        continue;
      }
      graph::bind_routed_experts(file, hp, il, lw);
      lw.routing.selection_bias = graph::need(file, il, "exp_probs_b", "bias");
      if (hp.n_expert_shared > 0) graph::bind_shared_experts(file, il, lw);
    }
    graph::log_skipped_nextn(file, hp);
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_glm4moe_graph() { return std::make_unique<Glm4MoeGraph>(); }

}  // namespace strata
