// Internal to the model: what an architecture's layer builder gets, the builder interface, and the blocks the
// architectures share (graph_blocks.cpp). Tensors passed to ops are views of the activations (host memory) and
// of the mapped weights, or of their copies in a device's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "strata/hparams.hpp"
#include "strata/kv_cache.hpp"
#include "strata/model.hpp"

namespace strata {

// One window's place: its activations, its KV slot and its size.
struct GraphContext {
  const HParams& hp;
  Activations& act;
  const KvCache& kv;
  std::span<const SlotRun> runs;  // the sequences side by side in the window (one for a plain window)
  int64_t n_tok;
  const DeviceWeights* device;  // the weights on a device (null: the mapped file, host memory)
  ExpertPlacement* placement;   // with device: where the routed experts come from (null: the device has them all)

  // A weight as ops take it: a view of the mapped file, or its copy on the device.
  strata_tensor weight(Tensor t) const;
};

// Collects a window's stages: ops go into the open stage; a host step closes it.
class StageList {
 public:
  std::vector<strata_op>& ops();
  void host(std::function<void()> step);
  std::vector<Stage> take();

 private:
  std::vector<Stage> stages_;
};

class Model::Graph {
 public:
  virtual ~Graph() = default;
  // Fills the model's weights from the file's tensors (which the arch check has already found and measured).
  virtual void bind(const gguf::Model& file, const HParams& hp, ModelWeights& weights) const = 0;
  // Layer il's ops for the window. By default (graph_blocks.cpp) emit_attention, then the layer's FFN (emit_ffn);
  // an architecture whose blocks differ overrides it.
  virtual void emit_layer(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) const;
};

std::unique_ptr<Model::Graph> make_llama_graph();
std::unique_ptr<Model::Graph> make_qwen3moe_graph();
std::unique_ptr<Model::Graph> make_glm4moe_graph();
std::unique_ptr<Model::Graph> make_qwen2moe_graph();
std::unique_ptr<Model::Graph> make_gpt_oss_graph();
std::unique_ptr<Model::Graph> make_deepseek2_graph();
std::unique_ptr<Model::Graph> make_qwen3vlmoe_graph();

namespace graph {

// Op builders the blocks share. `rows_of`: the first width x n floats of a buffer as [width, n].
strata_tensor rows_of(const Buffer<float>& buf, int64_t width, int64_t n);
void rms_norm(std::vector<strata_op>& ops, const strata_tensor& dst, const strata_tensor& src, const strata_tensor& w,
              float eps);
// dst = w x, then + bias when there is one.
void linear(std::vector<strata_op>& ops, const GraphContext& ctx, const strata_tensor& dst, Tensor w,
            const strata_tensor& x, Tensor bias);
// x = x + y.
void add_into(std::vector<strata_op>& ops, const strata_tensor& x, const strata_tensor& y);
// The window's positions, i32 [n_tok].
strata_tensor positions(const GraphContext& ctx);
// dst = ROPE(src) at the window's positions with the spec's mode, n_rot, base, scale and YaRN.
void rope(std::vector<strata_op>& ops, const strata_tensor& dst, const strata_tensor& src, const AttentionSpec& s,
          const GraphContext& ctx);

// A weight the model needs (the arch check has made sure it is there), or an optional one.
Tensor need(const gguf::Model& file, uint32_t il, const char* stem, const char* suffix = "weight");
Tensor maybe(const gguf::Model& file, uint32_t il, const char* stem, const char* suffix = "weight");
// token_embd, output_norm, output (tied to token_embd when absent).
void bind_embeddings_and_head(const gguf::Model& file, ModelWeights& w);
// Block il's attention tensors: attn_norm, the q/k/v/o projections, their biases and the per-head q/k norms where
// the file has them; a fused attn_qkv is refused by name.
void bind_attention(const gguf::Model& file, uint32_t il, AttentionWeights& a);
// The attention's shape from the hyperparameters: scale 1/sqrt(head_dim), RoPE in `rope_mode` (0 adjacent pairs,
// 2 neox halves) on n_rot dims, full (not sliding) attention.
AttentionSpec attention_spec(const HParams& hp, int rope_mode);
// Block il's dense SwiGLU FFN (ffn_gate, ffn_up, ffn_down; their biases where the file has them).
void bind_dense_ffn(const gguf::Model& file, uint32_t il, LayerWeights& lw);
// Block il's shared expert (ffn_{gate,up,down}_shexp).
void bind_shared_experts(const gguf::Model& file, uint32_t il, LayerWeights& lw);
// Says that the trailing nextn (MTP) blocks are recognised and skipped by plain decoding (nothing without them).
void log_skipped_nextn(const gguf::Model& file, const HParams& hp);
// The routed experts of block il (ffn_gate_exps, ffn_up_exps, ffn_down_exps) and the router ffn_gate_inp.
void bind_routed_experts(const gguf::Model& file, const HParams& hp, uint32_t il, LayerWeights& lw);

// Residual-stream blocks. Each reads act.x and adds its output to it.
// Attention: attn_norm, q/k/v projections (with biases when present), per-head q/k norms when present, RoPE,
// the KV store, grouped-query attention over the slot's cache, the output projection.
void emit_attention(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out);
// SwiGLU FFN: ffn_norm, gate and up, SWIGLU, down.
void emit_dense_ffn(const LayerWeights& lw, const GraphContext& ctx, StageList& out);
// The shared expert of a MoE layer into act.shared_out. glm4moe, deepseek2: a SwiGLU FFN of the normed rows act.xn,
// unweighted (its gate and up use act.ffn_gate and act.ffn_up). qwen2moe (a gate_inp): the gate's logit and a
// one-expert sigmoid ROUTER, then MOE_ROUTED over the device's one-entry table; on the host path the MOE op is
// built by the layer's host step (build_shared_moe_op) and run after the routed one.
void emit_shared_expert(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, std::vector<strata_op>& ops);
// MoE FFN: ffn_norm, router logits, ROUTER (sigmoid gating and the selection bias when the layer has them); the
// shared expert when the layer has one; a host step turns the choices into the MOE op; MOE; the shared expert's
// output added to the routed sum; the add into the residual stream.
void emit_moe_ffn(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out);
// The layer's FFN: emit_moe_ffn where it has experts, emit_dense_ffn otherwise.
void emit_ffn(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out);

}  // namespace graph

// moe_routing.cpp: the router's choices (act.expert_ids / act.expert_weights, k per token) as the MOE op over
// the layer's experts: the distinct experts in ascending id, each with its tokens in window order.
void build_moe_op(uint32_t il, const ExpertStack& experts, uint32_t k, const GraphContext& ctx);
// qwen2moe's gated shared expert as act.moe_shared: one expert, every token in window order, weighted by
// act.shared_weights.
void build_shared_moe_op(const SharedExperts& shared, const GraphContext& ctx);

}  // namespace strata
