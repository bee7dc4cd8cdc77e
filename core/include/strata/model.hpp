// A model loaded from a GGUF, and the op lists of its forward pass.
//
// Weights stay memory-mapped: every weight below is a view of the file's bytes (nothing is copied), checked at
// load against the architecture's tensor list (arch.hpp). For each window of tokens (a prefill chunk, one decode
// token, later a verify window) the model emits its program as stages: a stage's ops (plugin_api.h's strata_op)
// run on any backend, then its host step, if any, runs (MoE layers: the router's choices become the MOE op of
// the next stage; this is where the GPU path's planner will sit). One file per architecture builds the layers
// (core/src/model/<arch>_graph.cpp); llama, qwen3moe, qwen2moe and glm4moe are built so far, and the weight and
// routing structs already carry what the later ones need (shared experts, sigmoid and grouped routing with a
// correction bias, expert biases and clamped SwiGLU, attention sinks, compressed MLA attention).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/format/expert_routes.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"
#include "strata/plugin_api.h"
#include "strata/tokenizer.hpp"

namespace strata {

class KvCache;
class DeviceWeights;

using Tensor = const gguf::TensorView*;  // a weight in the mapped file; nullptr when the model has none

// ---- weights ----------------------------------------------------------------------------------------------

// How a layer's attention is computed.
struct AttentionSpec {
  uint32_t n_head = 0, n_head_kv = 0;
  uint32_t head_dim = 0;      // of queries and keys (and values: the ATTENTION op has one head size)
  float scale = 0.0f;         // applied to q.k: 1/sqrt(head_dim) unless the architecture says otherwise
  int rope_mode = 0;          // 0 adjacent pairs (llama), 2 neox halves (qwen3moe), 40 interleaved M-RoPE (qwen3vl)
  std::array<uint32_t, 4> rope_sections{};  // mode 40: pairs per position component (t, row, column, e)
  uint32_t n_rot = 0;
  float rope_freq_base = 10000.0f, rope_freq_scale = 1.0f;
  // YaRN (the ROPE op's f[2..5]): ext_factor 0 = off; mscale multiplies cos and sin; the correction range lo..hi.
  float rope_ext_factor = 0.0f, rope_mscale = 1.0f, rope_corr_lo = 0.0f, rope_corr_hi = 0.0f;
  uint32_t sliding_window = 0;  // gpt-oss's banded layers; 0 = full attention
};

struct AttentionWeights {
  Tensor norm = nullptr;                                  // attn_norm (F32)
  Tensor q = nullptr, k = nullptr, v = nullptr, o = nullptr;
  Tensor qkv = nullptr;                                   // fused attn_qkv, in place of q, k, v
  Tensor q_bias = nullptr, k_bias = nullptr, v_bias = nullptr, o_bias = nullptr;
  Tensor q_norm = nullptr, k_norm = nullptr;              // per-head RMS norms (qwen3moe)
  Tensor sinks = nullptr;                                 // attention sinks (gpt-oss): one logit per head
  // DeepSeek's multi-head latent attention (compressed KV): q through a low-rank pair, k/v from a shared latent.
  Tensor q_a = nullptr, q_a_norm = nullptr, q_b = nullptr;
  Tensor kv_a_mqa = nullptr, kv_a_norm = nullptr, kv_b = nullptr, k_b = nullptr, v_b = nullptr;
};

// How a MoE layer picks its experts and weighs them (the ROUTER op's parameters, and what it cannot say yet).
struct RoutingSpec {
  uint32_t n_expert = 0, k = 0;
  GatingFunc gating = GatingFunc::Softmax;
  bool normalize = false;       // divide the k weights by their sum
  float scale = 1.0f;           // multiplies every weight
  Tensor selection_bias = nullptr;  // exp_probs_b: the correction bias that only selects (deepseek2, glm4moe)
  uint32_t n_group = 0, topk_group = 0;  // grouped routing (DeepSeek V3): 0 = off
};

// A layer's routed experts, stacked along ne[2] of each tensor.
struct ExpertStack {
  Tensor gate = nullptr, up = nullptr, down = nullptr;  // [n_embd, n_ff, E], [n_embd, n_ff, E], [n_ff, n_embd, E]
  Tensor gate_up = nullptr;                             // fused [n_embd, 2 n_ff, E]: gate rows, then up rows
  Tensor gate_bias = nullptr, up_bias = nullptr, down_bias = nullptr;  // gpt-oss: [n_ff, E], [n_ff, E], [n_embd, E]
  // gpt-oss's SwiGLU-OAI (strata_expert_form); activation 0 (plain SwiGLU) elsewhere.
  uint32_t activation = 0;
  float swiglu_alpha = 0.0f, swiglu_limit = 0.0f;
  uint32_t n_ff = 0;
  // The biases and activation as the ops take them, over the mapped file (set by finish_form()).
  strata_expert_form host_form{};

  // Expert e's matrices as the MOE op takes them: pointers into the mapped stacks.
  strata_expert_weights expert(uint32_t e) const;
  // Fills host_form from the bias tensors (F32, checked) and the activation.
  void finish_form();
  // The form the MOE ops take: NULL when the experts are plain SwiGLU without biases (no change for other models).
  const strata_expert_form* form() const;
};

// Experts every token passes through (qwen2moe, deepseek2, glm4moe), added after the routed ones.
struct SharedExperts {
  Tensor gate = nullptr, up = nullptr, down = nullptr;
  Tensor gate_inp = nullptr;  // qwen2moe: a sigmoid gate on the shared expert's output
};

struct LayerWeights {
  AttentionWeights attn;
  AttentionSpec attn_spec;
  Tensor ffn_norm = nullptr;
  // Dense FFN (and deepseek2's leading dense blocks).
  Tensor ffn_gate = nullptr, ffn_up = nullptr, ffn_down = nullptr;
  Tensor ffn_gate_bias = nullptr, ffn_up_bias = nullptr, ffn_down_bias = nullptr;
  // MoE.
  Tensor router = nullptr;  // ffn_gate_inp [n_embd, n_expert]
  Tensor router_bias = nullptr;  // ffn_gate_inp.bias (gpt-oss): added to the logits, so it moves the weights too
  RoutingSpec routing;
  ExpertStack experts;
  SharedExperts shared;

  bool has_experts() const { return router != nullptr; }
};

struct ModelWeights {
  Tensor token_embd = nullptr;
  Tensor output_norm = nullptr;
  Tensor output = nullptr;  // token_embd when the head is tied to the embeddings
  std::vector<LayerWeights> layers;
};

// ---- windows and their programs ---------------------------------------------------------------------------

// The activations of one window, sized for the largest window (max_tokens): in host memory, or in the device
// memory of a GPU backend (mem). Tokens and positions are written on the host and uploaded; logits are read back.
struct Activations {
  DeviceMemory* mem = nullptr;             // null: host memory
  uint32_t max_tokens = 0;
  std::vector<int32_t> host_tokens, host_positions;  // [max_tokens], what the window's ops read after upload
  Buffer<int32_t> tokens, positions;       // [max_tokens]
  // M-RoPE models (Qwen3-VL): each token's four position components [max_tokens, 4] component-major, and an image
  // window's input rows, part-major [1 + n_deepstack][max_tokens][n_embd] (empty otherwise).
  Buffer<int32_t> rope_positions;
  std::vector<int32_t> host_rope_positions;
  Buffer<float> input_rows;
  std::vector<float> host_input_rows;
  Buffer<float> x;                         // the residual stream [n_embd, n]
  Buffer<float> xn;                        // normed rows [n_embd, n]
  Buffer<float> q, k, v;                   // [n_head * head_dim, n], [n_head_kv * head_dim, n] twice
  Buffer<float> q_alt, k_alt;              // second buffers for q and k: ops never write over their inputs
  Buffer<float> attn;                      // attention output [n_head * head_dim, n]
  Buffer<float> out;                       // a block's output before the residual add [n_embd, n]
  Buffer<float> shared_out;                // a shared expert's output [n_embd, n] (models with shared experts)
  Buffer<float> shared_gate_logit;         // qwen2moe: the shared expert's gate logit [1, n]
  Buffer<int32_t> shared_ids;              // qwen2moe: ROUTER's id over the one shared expert [1, n] (always 0)
  Buffer<float> shared_weights;            // qwen2moe: sigmoid of the gate logit [1, n], the shared expert's weight
  Buffer<float> ffn_gate, ffn_up;          // [widest FFN, n]
  Buffer<float> router_logits;             // [n_expert, n]
  Buffer<int32_t> expert_ids;              // [k, n]
  Buffer<float> expert_weights;            // [k, n]
  uint32_t max_logit_rows = 0;
  Buffer<float> logits;                    // [n_vocab, max_logit_rows]
  std::vector<float> host_logits;          // the logits read back from the device (device activations only)

  // The MOE op of the current layer, built from the router's outputs on the host (moe_routing.cpp); backends
  // with device memory get MOE_ROUTED instead, over the expert tables of DeviceWeights.
  format::ExpertRoutes moe_routes;
  std::vector<strata_expert_weights> moe_weights;
  strata_moe_op moe{};
  // qwen2moe's gated shared expert on the host path: one expert, every token, weighted by shared_weights.
  std::vector<uint32_t> shared_rows;            // 0..n-1
  std::array<uint32_t, 2> shared_offsets{};     // {0, n}
  uint32_t shared_expert_id = 0;
  strata_expert_weights shared_expert{};
  strata_moe_op moe_shared{};
  // Tokens routed per (layer, expert), layer-major [n_layer * n_expert], counted by those host steps for the live
  // page and /metrics (the device paths count elsewhere: the hybrid path in its cache, the all-device path not).
  std::vector<uint64_t> route_counts;

  // Copies the first n tokens and positions to where the ops read them.
  void upload_window(size_t n);
  // A layer's MOE_ROUTED over a window of n tokens: the normed rows, the router's k ids and weights, into `out`
  // (src3, i[0] and i[2] left for the caller).
  strata_op moe_routed(uint32_t n_embd, uint32_t k, uint32_t n, const strata_expert_table* table) const;
  // The first `rows` columns of logits in host memory ([n_vocab] floats each), read back when on the device.
  std::span<const float> read_logits(size_t n_vocab, size_t rows);
};

// The layers [begin, end) one card runs (runtime.layer_split): the first card's range starts at 0 and takes the
// embeddings; the last one's ends at n_layer (or beyond) and takes the output head. The default is every layer.
struct LayerRange {
  uint32_t begin = 0;
  uint32_t end = UINT32_MAX;
  bool holds(uint32_t layer) const { return layer >= begin && layer < end; }
  bool whole() const { return begin == 0 && end == UINT32_MAX; }
};

// One sequence's part of a window of several (runtime.slots): the window's tokens [column, column + n) are the KV
// slot `slot`'s consecutive positions from first_position on.
struct SlotRun {
  uint32_t slot = 0;
  uint32_t first_position = 0;
  uint32_t column = 0;
  uint32_t n = 0;
};

// A window: consecutive tokens of one sequence (slot of the KV cache) at consecutive positions, or, with `runs`,
// the tokens of several sequences side by side (one run each, in column order, each slot at most once). Every op
// but attention and the KV stores sees one window of tokens: the matrix products and the experts work on all of
// them at once (the hybrid path plans the union of their experts); each run stores to and attends over its own
// slot. A window of several runs keeps every token's logits.
struct Window {
  std::span<const TokenId> tokens;
  uint32_t first_position = 0;
  uint32_t slot = 0;
  bool all_logits = false;  // logits of every token (verify windows), or of the last one only
  std::span<const SlotRun> runs = {};  // empty: one run, {slot, first_position, 0, tokens.size()}
  // Qwen3-VL: an image's rows in place of the tokens' embeddings (tokens then only count the window), each row
  // Model::input_width() floats: the main part, then each deepstack part. Empty for text.
  std::span<const float> embeddings = {};
  // M-RoPE models (required there): the tokens' position components, component-major [4 * n] (t..., row...,
  // column..., e...); the engine derives them (a text token: (p, p, p, 0), p its cache position less the images'
  // shift).
  std::span<const int32_t> mrope_positions = {};

  // The runs, checked (they must tile the tokens in order, each slot once); one run when `runs` is empty.
  std::vector<SlotRun> slot_runs() const;
};

// Where a MoE layer's routed experts come from when the weights are on a device but the experts are not all there
// (the hybrid path, core/src/engine/hybrid_moe.hpp). The host reads each layer's router choices and puts each
// chosen expert somewhere the layer's MOE_ROUTED reads it: a cache slot, a staging slot filled over PCIe, or a
// weighted row computed by the CPU pool. Two ways (one_program says which for a window):
//  - simple: the layer's stage ends after ROUTER with a host step, place(il, n_tok), and MOE_ROUTED starts the
//    next stage;
//  - one program (fast mode): the window is one op list; after ROUTER the handoff ops signal the host, and before
//    MOE_ROUTED the takeover ops wait for the host's placement. The host places while the device program runs.
class ExpertPlacement {
 public:
  virtual ~ExpertPlacement() = default;
  virtual bool one_program(uint32_t n_tok) const = 0;
  // One program: the ops after layer il's ROUTER, and those before its MOE_ROUTED.
  virtual void emit_handoff(uint32_t il, uint32_t n_tok, std::vector<strata_op>& ops) const = 0;
  virtual void emit_takeover(uint32_t il, std::vector<strata_op>& ops) const = 0;
  // One program: MOE_ROUTED's src3 (precomputed_rows) comes with a ready flag (i[0] = 1), raised by the host once
  // its rows are written, so the device computes its own experts meanwhile.
  virtual bool rows_ready_flag(uint32_t n_tok) const = 0;
  // One program: MOE_ROUTED also stamps the device's clock after the ready flag as it starts waiting on it (i[3] = 1).
  virtual bool rows_stamped(uint32_t n_tok) const { (void)n_tok; return false; }
  // The host step after layer il's ROUTER, for a window of n_tok tokens.
  virtual void place(uint32_t il, uint32_t n_tok) = 0;
  // Layer il's table as the last place() left it (the entries live in device memory).
  virtual const strata_expert_table* table(uint32_t il) const = 0;
  // MOE_ROUTED's src3: the pool's weighted rows [n_embd, k * n_tok] (mapped host memory).
  virtual strata_tensor precomputed_rows(uint32_t n_tok, uint32_t k) const = 0;
};

// Ops to run in order on a backend, then an optional host step.
struct Stage {
  std::vector<strata_op> ops;
  std::function<void()> host;
};

class Model {
 public:
  // Opens the GGUF (memory-mapped), reads its hyperparameters and tokenizer, and checks that every tensor of
  // the architecture is there with its shape. Throws strata::Error naming the file and what is wrong; an
  // architecture whose graph is not built yet is refused by name.
  static std::unique_ptr<Model> load(const std::string& path);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const HParams& hparams() const { return hp_; }
  const gguf::Model& file() const { return *file_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelWeights& weights() const { return weights_; }
  // The mapped files' total size in bytes.
  uint64_t file_bytes() const;
  // The KV cache width of a layer (keys and values alike here).
  uint32_t kv_dim() const;
  // The width of a row fed in place of a token's embedding (Qwen3-VL images): n_embd x (1 + n_deepstack).
  uint32_t input_width() const { return hp_.n_embd * (1 + hp_.n_deepstack); }
  // Whether the model's RoPE takes four position components per token (interleaved M-RoPE).
  bool mrope() const { return hp_.arch == Arch::Qwen3VlMoe; }
  // deepseek2's latent attention: the values are the cache's first kv_value_view() key columns (no value matrix);
  // 0 for every other model.
  uint32_t kv_value_view() const;

  // Activations for windows of up to max_tokens tokens, keeping the logits of up to max_logit_rows of them, in
  // host memory (mem null) or in a device's.
  Activations make_activations(uint32_t max_tokens, uint32_t max_logit_rows, DeviceMemory* mem = nullptr) const;

  // The whole program of one window: embeddings, every layer, the output head (logits into act.logits: one
  // column per token when w.all_logits, else one for the last token). Tokens and positions are copied into act
  // (and uploaded); the caller has made room for them in the KV cache. With `device` (the weights in a device's
  // memory) every weight is addressed there and MoE layers take MOE_ROUTED with no host step; with `placement`
  // too (the routed experts are not on the device), each MoE layer's stage ends in placement's host step.
  // With `layers` short of the whole model (runtime.layer_split), only those layers: the embeddings when it starts at
  // 0 (otherwise act.x holds the residual stream the previous card left), the head when it reaches the last layer
  // (otherwise act.x is left for the next card).
  std::vector<Stage> build_window(const Window& w, Activations& act, const KvCache& kv,
                                  const DeviceWeights* device = nullptr, ExpertPlacement* placement = nullptr,
                                  LayerRange layers = {}) const;

  class Graph;  // the architecture's layer builder (core/src/model/<arch>_graph.cpp)

 private:
  Model() = default;
  // M-RoPE models: the window's position components and an image window's rows into act (uploaded); returns
  // whether the window is an image's. Throws strata::Error for image inputs to another model or bad sizes.
  bool stage_image_inputs(const Window& w, Activations& act, int64_t n) const;
  std::unique_ptr<gguf::Model> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  HParams hp_;
  ModelWeights weights_;
  std::unique_ptr<Graph> graph_;
};

}  // namespace strata
