// llama: pre-norm blocks of grouped-query attention with RoPE on adjacent pairs (mode 0), then a SwiGLU FFN,
// dense or Mixtral-style routed experts (softmax over all experts, top-k, weights renormalised).
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"

namespace strata {
namespace {

class LlamaGraph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    if (file.find_tensor("rope_freqs.weight") != nullptr) {
      throw Error(file.name() + ": rope_freqs.weight (Llama 3 rope frequency factors) is not supported yet");
    }
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      LayerWeights& lw = w.layers[il];
      graph::bind_attention(file, il, lw.attn);
      lw.attn_spec = graph::attention_spec(hp, /*rope_mode=*/0);
      lw.ffn_norm = graph::need(file, il, "ffn_norm");
      if (!hp.has_experts()) {
        graph::bind_dense_ffn(file, il, lw);
        continue;
      }
      if (hp.n_ff_shexp > 0) {
        throw Error(file.name() + ": shared experts in a llama model (Granite MoE) are not supported yet");
      }
      graph::bind_routed_experts(file, hp, il, lw);
    }
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_llama_graph() { return std::make_unique<LlamaGraph>(); }

}  // namespace strata
