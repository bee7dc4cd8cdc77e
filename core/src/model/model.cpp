#include "strata/model.hpp"

#include <algorithm>
#include <string>

#include "graph.hpp"
#include "strata/arch.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/kv_cache.hpp"
#include "strata/op_builders.hpp"
#include "strata/op_tensor.hpp"

namespace strata {
namespace {

std::unique_ptr<Model::Graph> graph_for(const HParams& hp, const std::string& file) {
  switch (hp.arch) {
    case Arch::Llama: return make_llama_graph();
    case Arch::Qwen3Moe: return make_qwen3moe_graph();
    case Arch::Glm4Moe: return make_glm4moe_graph();
    case Arch::Qwen2Moe: return make_qwen2moe_graph();
    case Arch::GptOss: return make_gpt_oss_graph();
    case Arch::Deepseek2: return make_deepseek2_graph();
    case Arch::Qwen3VlMoe: return make_qwen3vlmoe_graph();
    default:
      throw Error(file + ": architecture " + std::string(arch_name(hp.arch)) +
                  " is recognised, but its forward pass is not built yet (llama, qwen3moe, qwen2moe, glm4moe, gpt-oss and deepseek2 are)");
  }
}

void require_matrix(Tensor t, const std::string& file) {
  if (t == nullptr) return;
  const format::GgmlType type = t->type;
  if (!format::has_canonical_dot(type) && !format::is_float_weight(type)) {
    throw Error(file + ": " + std::string(t->name) + " is " + std::string(format::traits(type).name) +
                ", a type matrix products cannot read");
  }
}

void require_f32(Tensor t, const std::string& file) {
  if (t != nullptr && t->type != format::GgmlType::F32) {
    throw Error(file + ": " + std::string(t->name) + " is " + std::string(format::traits(t->type).name) +
                "; norms, biases and router biases must be f32");
  }
}

// What the op set (plugin_api.h backend 1.0) cannot express yet, refused by name rather than computed wrongly.
void require_expressible(const HParams& hp, const ModelWeights& w, const std::string& file) {
  if (hp.head_dim_k != hp.head_dim_v && !hp.is_mla()) {
    throw Error(file + ": key heads of " + std::to_string(hp.head_dim_k) + " and value heads of " +
                std::to_string(hp.head_dim_v) + " differ; the attention op takes one head size");
  }
  if (hp.rope_scaling == RopeScaling::LongRope && hp.rope_freq_scale != 1.0f) {
    throw Error(file + ": LongRoPE context extension is not supported yet (YaRN is)");
  }
  if (!format::has_dequantize(w.token_embd->type)) {
    throw Error(file + ": token_embd.weight has type " + std::string(format::traits(w.token_embd->type).name) +
                ", which cannot be decoded");
  }
  require_f32(w.output_norm, file);
  require_matrix(w.output, file);
  for (const LayerWeights& lw : w.layers) {
    for (Tensor t : {lw.attn.norm, lw.attn.q_norm, lw.attn.k_norm, lw.ffn_norm, lw.attn.q_bias, lw.attn.k_bias,
                     lw.attn.v_bias, lw.attn.o_bias, lw.ffn_gate_bias, lw.ffn_up_bias, lw.ffn_down_bias,
                     lw.routing.selection_bias, lw.router_bias, lw.attn.sinks}) {
      require_f32(t, file);
    }
    for (Tensor t : {lw.attn.q, lw.attn.k, lw.attn.v, lw.attn.o, lw.ffn_gate, lw.ffn_up, lw.ffn_down, lw.router,
                     lw.experts.gate, lw.experts.up, lw.experts.down, lw.shared.gate, lw.shared.up, lw.shared.down,
                     lw.shared.gate_inp}) {
      require_matrix(t, file);
    }
    if (lw.has_experts()) {
      const RoutingSpec& r = lw.routing;
      if (r.n_group > 1 && (r.n_expert % r.n_group != 0 || r.topk_group == 0 || r.topk_group > r.n_group ||
                            r.k > r.topk_group * (r.n_expert / r.n_group))) {
        throw Error(file + ": expert_group_count " + std::to_string(r.n_group) + " and expert_group_used_count " +
                    std::to_string(r.topk_group) + " cannot choose " + std::to_string(r.k) + " of " +
                    std::to_string(r.n_expert) + " experts");
      }
    }
  }
}

}  // namespace

void ExpertStack::finish_form() {
  const auto bias = [](Tensor t) -> const float* {
    if (t == nullptr) return nullptr;
    if (t->type != format::GgmlType::F32) {
      throw Error(std::string(t->name) + ": an expert bias must be F32, not " + std::string(format::traits(t->type).name));
    }
    return reinterpret_cast<const float*>(t->data);
  };
  host_form = strata_expert_form{activation, swiglu_alpha, swiglu_limit, 0, bias(gate_bias), bias(up_bias),
                                 bias(down_bias)};
}

const strata_expert_form* ExpertStack::form() const { return format::form_is_plain(&host_form) ? nullptr : &host_form; }

strata_expert_weights ExpertStack::expert(uint32_t e) const {
  const auto at = [e](Tensor t) {
    const uint64_t stride = format::row_bytes(t->type, t->ne[0]) * t->ne[1];
    return static_cast<const void*>(t->data + stride * e);
  };
  return strata_expert_weights{at(gate),
                               at(up),
                               at(down),
                               static_cast<uint32_t>(gate->type),
                               static_cast<uint32_t>(up->type),
                               static_cast<uint32_t>(down->type),
                               0};
}

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& path) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::make_unique<gguf::Model>(gguf::Model::open(path));
  m->hp_ = read_hparams(m->file_->metadata());
  m->graph_ = graph_for(m->hp_, m->file_->name());
  require_valid(m->hp_, *m->file_);
  m->tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_metadata(m->file_->metadata()));
  m->graph_->bind(*m->file_, m->hp_, m->weights_);
  require_expressible(m->hp_, m->weights_, m->file_->name());
  return m;
}

uint64_t Model::file_bytes() const {
  uint64_t total = 0;
  for (size_t i = 0; i < file_->part_count(); ++i) total += file_->part(i).size();
  return total;
}

uint32_t Model::kv_dim() const { return hp_.n_embd_k_gqa(); }
uint32_t Model::kv_value_view() const { return hp_.arch == Arch::Deepseek2 && hp_.is_mla() ? hp_.kv_lora_rank : 0; }

Activations Model::make_activations(uint32_t max_tokens, uint32_t max_logit_rows, DeviceMemory* mem) const {
  if (max_tokens == 0 || max_logit_rows == 0) throw Error("a window needs room for at least one token");
  const size_t n = max_tokens;
  uint32_t ffn = 0;
  for (const LayerWeights& lw : weights_.layers) {
    if (lw.ffn_gate != nullptr) ffn = std::max(ffn, static_cast<uint32_t>(lw.ffn_gate->ne[1]));
    if (lw.shared.gate != nullptr) ffn = std::max(ffn, static_cast<uint32_t>(lw.shared.gate->ne[1]));
  }
  ffn = std::max(ffn, hp_.q_lora_rank);  // deepseek2's query LoRA passes through the FFN buffers
  const bool shared = std::any_of(weights_.layers.begin(), weights_.layers.end(),
                                  [](const LayerWeights& lw) { return lw.shared.gate != nullptr; });
  const size_t k = std::max<uint32_t>(hp_.n_expert_used, 1);
  Activations a;
  a.mem = mem;
  a.max_tokens = max_tokens;
  a.host_tokens.resize(n);
  a.host_positions.resize(n);
  a.tokens = Buffer<int32_t>(n, mem);
  a.positions = Buffer<int32_t>(n, mem);
  if (mrope()) {
    a.rope_positions = Buffer<int32_t>(4 * n, mem);
    a.host_rope_positions.resize(4 * n);
    a.input_rows = Buffer<float>(size_t{input_width()} * n, mem);
    a.host_input_rows.resize(a.input_rows.size());
  }
  a.x = Buffer<float>(hp_.n_embd * n, mem);
  a.xn = Buffer<float>(hp_.n_embd * n, mem);
  a.q = Buffer<float>(size_t{hp_.n_embd_q()} * n, mem);
  a.q_alt = Buffer<float>(a.q.size(), mem);
  a.k = Buffer<float>(size_t{hp_.n_embd_k_gqa()} * n, mem);
  a.k_alt = Buffer<float>(a.k.size(), mem);
  a.v = Buffer<float>(size_t{hp_.n_embd_v_gqa()} * n, mem);
  a.attn = Buffer<float>(a.q.size(), mem);
  a.out = Buffer<float>(hp_.n_embd * n, mem);
  if (shared) a.shared_out = Buffer<float>(hp_.n_embd * n, mem);
  const bool gated = std::any_of(weights_.layers.begin(), weights_.layers.end(),
                                 [](const LayerWeights& lw) { return lw.shared.gate_inp != nullptr; });
  if (gated) {
    a.shared_gate_logit = Buffer<float>(n, mem);
    a.shared_ids = Buffer<int32_t>(n, mem);
    a.shared_weights = Buffer<float>(n, mem);
  }
  a.ffn_gate = Buffer<float>(ffn * n, mem);
  a.ffn_up = Buffer<float>(ffn * n, mem);
  a.router_logits = Buffer<float>(hp_.n_expert * n, mem);
  a.expert_ids = Buffer<int32_t>(k * n, mem);
  a.expert_weights = Buffer<float>(k * n, mem);
  if (hp_.n_expert > 0) a.route_counts.assign(size_t{hp_.n_layer} * hp_.n_expert, 0);
  a.max_logit_rows = std::min(max_tokens, max_logit_rows);
  a.logits = Buffer<float>(size_t{hp_.n_vocab} * a.max_logit_rows, mem);
  if (mem != nullptr) a.host_logits.resize(a.logits.size());
  return a;
}

strata_op Activations::moe_routed(uint32_t n_embd, uint32_t k, uint32_t n, const strata_expert_table* table) const {
  strata_op op = new_op(STRATA_OP_MOE_ROUTED);
  op.src[0] = tensor_f32(xn.data(), {n_embd, n});
  op.src[1] = tensor_i32(expert_ids.data(), {k, n});
  op.src[2] = tensor_f32(expert_weights.data(), {k, n});
  op.dst = tensor_f32(out.data(), {n_embd, n});
  op.extra = table;
  return op;
}

bool Model::stage_image_inputs(const Window& w, Activations& act, int64_t n) const {
  if (!mrope()) {
    if (!w.embeddings.empty() || !w.mrope_positions.empty()) {
      throw Error("image rows and M-RoPE positions are for Qwen3-VL models (qwen3vlmoe); this one is " +
                  std::string(arch_name(hp_.arch)));
    }
    return false;
  }
  // The engine gives every window of an M-RoPE model its positions (Engine::run, feed_image): only it knows each
  // slot's image shift.
  const auto nn = static_cast<size_t>(n);
  int32_t* rp = act.host_rope_positions.data();
  if (w.mrope_positions.size() != 4 * nn) {
    throw Error("a window of " + std::to_string(n) + " tokens has " + std::to_string(w.mrope_positions.size()) +
                " M-RoPE position components; an M-RoPE model's windows need " + std::to_string(4 * nn));
  }
  std::copy(w.mrope_positions.begin(), w.mrope_positions.end(), rp);
  const bool image = !w.embeddings.empty();
  const size_t width = input_width(), parts = 1 + hp_.n_deepstack, embd = hp_.n_embd;
  if (image) {
    if (w.embeddings.size() != nn * width) {
      throw Error("an image window of " + std::to_string(n) + " tokens has " + std::to_string(w.embeddings.size()) +
                  " floats; expected " + std::to_string(nn * width) + " (" + std::to_string(width) + " per token)");
    }
    // Token-major rows [main | deepstack 0 | ...] into part-major blocks, each [n_embd, n].
    for (size_t p = 0; p < parts; ++p) {
      for (size_t t = 0; t < nn; ++t) {
        std::copy_n(w.embeddings.data() + t * width + p * embd, embd, act.host_input_rows.data() + (p * nn + t) * embd);
      }
    }
  }
  if (act.mem != nullptr) {
    act.mem->upload(act.rope_positions.data(), rp, 4 * nn * sizeof(int32_t));
    if (image) act.mem->upload(act.input_rows.data(), act.host_input_rows.data(), nn * width * sizeof(float));
  } else {
    std::copy_n(rp, 4 * nn, act.rope_positions.data());
    if (image) std::copy_n(act.host_input_rows.data(), nn * width, act.input_rows.data());
  }
  return image;
}

void Activations::upload_window(size_t n) {
  if (mem != nullptr) {
    mem->upload(tokens.data(), host_tokens.data(), n * sizeof(int32_t));
    mem->upload(positions.data(), host_positions.data(), n * sizeof(int32_t));
  } else {
    std::copy_n(host_tokens.data(), n, tokens.data());
    std::copy_n(host_positions.data(), n, positions.data());
  }
}

std::span<const float> Activations::read_logits(size_t n_vocab, size_t rows) {
  if (mem == nullptr) return {logits.data(), n_vocab * rows};
  mem->download(host_logits.data(), logits.data(), n_vocab * rows * sizeof(float));
  return {host_logits.data(), n_vocab * rows};
}

std::vector<SlotRun> Window::slot_runs() const {
  const auto n = static_cast<uint32_t>(tokens.size());
  if (runs.empty()) return {SlotRun{slot, first_position, 0, n}};
  std::vector<SlotRun> out(runs.begin(), runs.end());
  uint32_t column = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const SlotRun& r = out[i];
    if (r.n == 0 || r.column != column) {
      throw Error("a window's run " + std::to_string(i) + " (slot " + std::to_string(r.slot) + ") starts at column " +
                  std::to_string(r.column) + " with " + std::to_string(r.n) + " tokens; runs must tile the window's " +
                  std::to_string(n) + " tokens in order, each at least one");
    }
    for (size_t j = 0; j < i; ++j) {
      if (out[j].slot == r.slot) throw Error("a window holds slot " + std::to_string(r.slot) + " twice");
    }
    column += r.n;
  }
  if (column != n) {
    throw Error("a window's runs cover " + std::to_string(column) + " of its " + std::to_string(n) + " tokens");
  }
  return out;
}

std::vector<Stage> Model::build_window(const Window& w, Activations& act, const KvCache& kv,
                                       const DeviceWeights* device, ExpertPlacement* placement, LayerRange layers) const {
  const auto n = static_cast<int64_t>(w.tokens.size());
  const std::vector<SlotRun> runs = w.slot_runs();
  const bool all_logits = w.all_logits || runs.size() > 1;
  if (n == 0 || n > act.max_tokens || (all_logits && n > act.max_logit_rows)) {
    throw Error("a window of " + std::to_string(n) + " tokens does not fit activations for " +
                std::to_string(act.max_tokens) + (all_logits ? " (and logits for " +
                std::to_string(act.max_logit_rows) + ")" : ""));
  }
  for (int64_t i = 0; i < n; ++i) {
    const TokenId t = w.tokens[static_cast<size_t>(i)];
    if (t < 0 || static_cast<uint32_t>(t) >= hp_.n_vocab) {
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary of " + std::to_string(hp_.n_vocab));
    }
    act.host_tokens[static_cast<size_t>(i)] = t;
  }
  for (const SlotRun& r : runs) {
    for (uint32_t i = 0; i < r.n; ++i) act.host_positions[r.column + i] = static_cast<int32_t>(r.first_position + i);
  }
  act.upload_window(static_cast<size_t>(n));
  const bool image = stage_image_inputs(w, act, n);
  const GraphContext ctx{hp_, act, kv, runs, n, device, placement};
  StageList stages;
  // An image window's rows, part-major in input_rows: part 0 replaces the embeddings, part l + 1 is added after
  // block l (deepstack).
  const auto part = [&](uint32_t p) { return tensor_f32(act.input_rows.data() + size_t{p} * hp_.n_embd * n, {hp_.n_embd, n}); };
  if (layers.begin == 0) {
    strata_op embed = new_op(image ? STRATA_OP_COPY : STRATA_OP_GET_ROWS);
    embed.dst = tensor_f32(act.x.data(), {hp_.n_embd, n});
    if (image) {
      embed.src[0] = part(0);
    } else {
      embed.src[0] = ctx.weight(weights_.token_embd);
      embed.src[1] = tensor_i32(act.tokens.data(), {n});
    }
    stages.ops().push_back(embed);
  }

  // The trailing MTP blocks (nextn_predict_layers) are not part of plain decoding.
  const uint32_t n_main = hp_.n_layer_main();
  const uint32_t end = std::min(layers.end, n_main);
  for (uint32_t il = layers.begin; il < end; ++il) {
    graph_->emit_layer(il, weights_.layers[il], ctx, stages);
    if (image && il < hp_.n_deepstack) graph::add_into(stages.ops(), tensor_f32(act.x.data(), {hp_.n_embd, n}), part(il + 1));
  }
  if (end < n_main) return stages.take();  // the next card goes on from act.x

  // The head reads the last column only, unless every token's logits are wanted.
  const int64_t cols = all_logits ? n : 1;
  const int64_t first = n - cols;
  const strata_tensor xn = tensor_f32(act.xn.data(), {hp_.n_embd, cols});
  std::vector<strata_op>& ops = stages.ops();
  ops.push_back(ops::rms_norm(tensor_f32(act.x.data() + first * hp_.n_embd, {hp_.n_embd, cols}),
                              ctx.weight(weights_.output_norm), hp_.rms_eps, xn));
  ops.push_back(ops::mul_mat(ctx.weight(weights_.output), xn, tensor_f32(act.logits.data(), {hp_.n_vocab, cols})));
  return stages.take();
}

}  // namespace strata
