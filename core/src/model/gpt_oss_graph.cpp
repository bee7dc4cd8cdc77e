// gpt-oss: attention with q/k/v/o biases and per-head sinks, NeoX RoPE over the whole head (YaRN where the file
// says so), sliding-window layers (all but the last of each swa_period: the even ones) beside full ones, the
// FFN's norm named post_attention_norm; every layer MoE: router logits plus a bias, the k largest chosen and
// softmaxed among themselves; experts with gate/up/down biases and SwiGLU-OAI (alpha 1.702, clamp 7), llama.cpp's
// src/models/openai-moe.cpp as the arch/README describes it.
#include "graph.hpp"

namespace strata {
namespace {

// SwiGLU-OAI's constants: llama.cpp's openai-moe graph fixes them (the files carry no key for them).
constexpr float kSwigluAlpha = 1.702f;
constexpr float kSwigluLimit = 7.0f;

class GptOssGraph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      LayerWeights& lw = w.layers[il];
      graph::bind_attention(file, il, lw.attn);
      lw.attn.sinks = graph::need(file, il, "attn_sinks");
      lw.attn_spec = graph::attention_spec(hp, /*rope_mode=*/2);
      if (hp.layer_is_swa(il)) {
        lw.attn_spec.sliding_window = hp.sliding_window;
        lw.attn_spec.rope_freq_base = hp.rope_freq_base_swa;
      }
      lw.ffn_norm = graph::need(file, il, "post_attention_norm");
      graph::bind_routed_experts(file, hp, il, lw);
      lw.router_bias = graph::need(file, il, "ffn_gate_inp", "bias");
      ExpertStack& e = lw.experts;
      e.gate_bias = graph::need(file, il, "ffn_gate_exps", "bias");
      e.up_bias = graph::need(file, il, "ffn_up_exps", "bias");
      e.down_bias = graph::need(file, il, "ffn_down_exps", "bias");
      e.activation = STRATA_EXPERT_SWIGLU_OAI;
      e.swiglu_alpha = kSwigluAlpha;
      e.swiglu_limit = kSwigluLimit;
      e.finish_form();
    }
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_gpt_oss_graph() { return std::make_unique<GptOssGraph>(); }

}  // namespace strata
