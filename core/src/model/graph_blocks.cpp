// The blocks llama, qwen3moe, qwen2moe and glm4moe are made of, as ops over the window's activations. Ops never
// write over their own inputs, except the element-wise ADD and SWIGLU, whose dst may be their src0 (each element is
// read before it is written).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "graph.hpp"
#include "strata/device_weights.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/op_builders.hpp"
#include "strata/op_tensor.hpp"

namespace strata {

std::vector<strata_op>& StageList::ops() {
  if (stages_.empty() || stages_.back().host) stages_.emplace_back();
  return stages_.back().ops;
}

void StageList::host(std::function<void()> step) {
  ops();  // a host step closes the open stage (opening an empty one if the last stage is closed)
  stages_.back().host = std::move(step);
}

std::vector<Stage> StageList::take() { return std::move(stages_); }

strata_tensor GraphContext::weight(Tensor t) const { return device != nullptr ? device->tensor(*t) : tensor_of(*t); }

namespace graph {

strata_tensor rows_of(const Buffer<float>& buf, int64_t width, int64_t n) { return tensor_f32(buf.data(), {width, n}); }

void rms_norm(std::vector<strata_op>& ops, const strata_tensor& dst, const strata_tensor& src, const strata_tensor& w,
              float eps) {
  ops.push_back(ops::rms_norm(src, w, eps, dst));
}

// dst = w x, then + bias when there is one.
void linear(std::vector<strata_op>& ops, const GraphContext& ctx, const strata_tensor& dst, Tensor w,
            const strata_tensor& x, Tensor bias) {
  ops.push_back(ops::mul_mat(ctx.weight(w), x, dst));
  if (bias != nullptr) ops.push_back(ops::add(dst, ctx.weight(bias), dst));
}

void add_into(std::vector<strata_op>& ops, const strata_tensor& x, const strata_tensor& y) {
  ops.push_back(ops::add(x, y, x));
}

strata_tensor positions(const GraphContext& ctx) { return tensor_i32(ctx.act.positions.data(), {ctx.n_tok}); }

void rope(std::vector<strata_op>& ops, const strata_tensor& dst, const strata_tensor& src, const AttentionSpec& s,
          const GraphContext& ctx) {
  strata_op rope = new_op(STRATA_OP_ROPE);
  rope.dst = dst;
  rope.src[0] = src;
  // M-RoPE reads the window's four position components (component-major); the others the cache positions.
  rope.src[1] = s.rope_mode == 40 ? tensor_i32(ctx.act.rope_positions.data(), {ctx.n_tok, 4}) : positions(ctx);
  rope.i[0] = s.rope_mode;
  rope.i[1] = static_cast<int32_t>(s.n_rot);
  rope.f[0] = s.rope_freq_base;
  rope.f[1] = s.rope_freq_scale;
  rope.f[2] = s.rope_ext_factor;
  rope.f[3] = s.rope_mscale;
  rope.f[4] = s.rope_corr_lo;
  rope.f[5] = s.rope_corr_hi;
  for (size_t i = 0; i < s.rope_sections.size(); ++i) rope.i[2 + i] = static_cast<int32_t>(s.rope_sections[i]);
  ops.push_back(rope);
}

namespace {

// Per-head norm (when the layer has one) and RoPE of q or k: [head_dim, heads, n] from `buf`, ending in one of
// the two buffers; returns the tensor holding the result.
strata_tensor norm_and_rope(std::vector<strata_op>& ops, Buffer<float>& buf, Buffer<float>& alt,
                            uint32_t heads, Tensor head_norm, const AttentionSpec& s, const GraphContext& ctx) {
  const int64_t hd = s.head_dim;
  Buffer<float>* cur = &buf;
  Buffer<float>* other = &alt;
  if (head_norm != nullptr) {
    rms_norm(ops, tensor_f32(other->data(), {hd, heads, ctx.n_tok}), tensor_f32(cur->data(), {hd, heads, ctx.n_tok}),
             ctx.weight(head_norm), ctx.hp.rms_eps);
    std::swap(cur, other);
  }
  rope(ops, tensor_f32(other->data(), {hd, heads, ctx.n_tok}), tensor_f32(cur->data(), {hd, heads, ctx.n_tok}), s,
       ctx);
  return tensor_f32(other->data(), {hd * heads, ctx.n_tok});
}

}  // namespace

Tensor maybe(const gguf::Model& file, uint32_t il, const char* stem, const char* suffix) {
  return file.find_tensor("blk." + std::to_string(il) + "." + stem + "." + suffix);
}

Tensor need(const gguf::Model& file, uint32_t il, const char* stem, const char* suffix) {
  return &file.tensor("blk." + std::to_string(il) + "." + stem + "." + suffix);
}

void bind_embeddings_and_head(const gguf::Model& file, ModelWeights& w) {
  w.token_embd = &file.tensor("token_embd.weight");
  w.output_norm = &file.tensor("output_norm.weight");
  w.output = file.find_tensor("output.weight");
  if (w.output == nullptr) w.output = w.token_embd;
}

void bind_attention(const gguf::Model& file, uint32_t il, AttentionWeights& a) {
  if (maybe(file, il, "attn_qkv") != nullptr) {
    throw Error(file.name() + ": blk." + std::to_string(il) +
                ".attn_qkv.weight: fused q/k/v projections are not supported yet");
  }
  a.norm = need(file, il, "attn_norm");
  a.q = need(file, il, "attn_q");
  a.k = need(file, il, "attn_k");
  a.v = need(file, il, "attn_v");
  a.o = need(file, il, "attn_output");
  a.q_bias = maybe(file, il, "attn_q", "bias");
  a.k_bias = maybe(file, il, "attn_k", "bias");
  a.v_bias = maybe(file, il, "attn_v", "bias");
  a.o_bias = maybe(file, il, "attn_output", "bias");
  a.q_norm = maybe(file, il, "attn_q_norm");
  a.k_norm = maybe(file, il, "attn_k_norm");
}

AttentionSpec attention_spec(const HParams& hp, int rope_mode) {
  AttentionSpec s;
  s.n_head = hp.n_head;
  s.n_head_kv = hp.n_head_kv;
  s.head_dim = hp.head_dim_k;
  s.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  s.rope_mode = rope_mode;
  s.n_rot = hp.n_rot;
  s.rope_freq_base = hp.rope_freq_base;
  s.rope_freq_scale = hp.rope_freq_scale;
  if (hp.rope_scaling == RopeScaling::Yarn) {
    // llama.cpp's YaRN (34af94cd, llama-context.cpp): ext_factor 1 unless the file says otherwise; the correction
    // range from beta_fast and beta_slow over the original context, floored and ceiled; cos and sin grow by
    // 1 + 0.1 ln(factor) times rope.scaling.attn_factor (its yarn_attn_factor is recomputed there, so the file's
    // rope.scaling.yarn_attn_factor does not enter).
    s.rope_ext_factor = hp.yarn_ext_factor < 0.0f ? 1.0f : hp.yarn_ext_factor;
    const auto corr_dim = [&](float beta) {
      return static_cast<float>(hp.n_rot) *
             std::log(static_cast<float>(hp.rope_orig_ctx) / (beta * 2.0f * std::numbers::pi_v<float>)) /
             (2.0f * std::log(hp.rope_freq_base));
    };
    s.rope_corr_lo = std::max(0.0f, std::floor(corr_dim(hp.yarn_beta_fast)));
    s.rope_corr_hi = std::min(static_cast<float>(hp.n_rot) - 1.0f, std::ceil(corr_dim(hp.yarn_beta_slow)));
    const float factor = 1.0f / hp.rope_freq_scale;
    s.rope_mscale = hp.rope_attn_factor * (s.rope_ext_factor != 0.0f && factor > 1.0f ? 1.0f + 0.1f * std::log(factor)
                                                                                      : 1.0f);
  }
  return s;
}

void bind_dense_ffn(const gguf::Model& file, uint32_t il, LayerWeights& lw) {
  lw.ffn_gate = need(file, il, "ffn_gate");
  lw.ffn_up = need(file, il, "ffn_up");
  lw.ffn_down = need(file, il, "ffn_down");
  lw.ffn_gate_bias = maybe(file, il, "ffn_gate", "bias");
  lw.ffn_up_bias = maybe(file, il, "ffn_up", "bias");
  lw.ffn_down_bias = maybe(file, il, "ffn_down", "bias");
}

void bind_shared_experts(const gguf::Model& file, uint32_t il, LayerWeights& lw) {
  lw.shared.gate = need(file, il, "ffn_gate_shexp");
  lw.shared.up = need(file, il, "ffn_up_shexp");
  lw.shared.down = need(file, il, "ffn_down_shexp");
}

void log_skipped_nextn(const gguf::Model& file, const HParams& hp) {
  if (hp.n_layer_nextn == 0) return;
  const bool one = hp.n_layer_nextn == 1;
  log::info(file.name() + ": " + std::to_string(hp.n_layer_nextn) + " nextn (MTP) block" + (one ? "" : "s") +
            " (blk." + std::to_string(hp.n_layer_main()) + (one ? "" : ".." + std::to_string(hp.n_layer - 1)) +
            ") recognised and skipped: plain decoding runs the first " + std::to_string(hp.n_layer_main()) +
            " blocks");
}

void bind_routed_experts(const gguf::Model& file, const HParams& hp, uint32_t il, LayerWeights& lw) {
  lw.router = need(file, il, "ffn_gate_inp");
  lw.experts.gate = need(file, il, "ffn_gate_exps");
  lw.experts.up = need(file, il, "ffn_up_exps");
  lw.experts.down = need(file, il, "ffn_down_exps");
  lw.experts.n_ff = static_cast<uint32_t>(lw.experts.gate->ne[1]);
  lw.routing.n_expert = hp.n_expert;
  lw.routing.k = hp.n_expert_used;
  lw.routing.gating = hp.gating;
  lw.routing.normalize = hp.expert_weights_norm;
  lw.routing.scale = hp.expert_weights_scale;
}

void emit_attention(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) {
  const AttentionSpec& s = lw.attn_spec;
  const AttentionWeights& w = lw.attn;
  Activations& a = ctx.act;
  const int64_t n = ctx.n_tok;
  const int64_t n_q = int64_t{s.n_head} * s.head_dim;
  const int64_t n_kv = int64_t{s.n_head_kv} * s.head_dim;
  std::vector<strata_op>& ops = out.ops();
  rms_norm(ops, rows_of(a.xn, ctx.hp.n_embd, n), rows_of(a.x, ctx.hp.n_embd, n), ctx.weight(w.norm), ctx.hp.rms_eps);
  const strata_tensor xn = rows_of(a.xn, ctx.hp.n_embd, n);
  // The three products first, then their biases (glm4moe, gpt-oss, qwen2moe): products over one input that follow
  // each other run as one launch on a GPU (cuda's fuse_mul_mat_group), and each bias's ADD reads and writes its own
  // product's rows alone, so the order changes no bit.
  const std::pair<strata_tensor, Tensor> projections[] = {
      {rows_of(a.q, n_q, n), w.q_bias}, {rows_of(a.k, n_kv, n), w.k_bias}, {rows_of(a.v, n_kv, n), w.v_bias}};
  ops.push_back(ops::mul_mat(ctx.weight(w.q), xn, projections[0].first));
  ops.push_back(ops::mul_mat(ctx.weight(w.k), xn, projections[1].first));
  ops.push_back(ops::mul_mat(ctx.weight(w.v), xn, projections[2].first));
  for (const auto& [rows, bias] : projections) {
    if (bias != nullptr) ops.push_back(ops::add(rows, ctx.weight(bias), rows));
  }
  const strata_tensor q = norm_and_rope(ops, a.q, a.q_alt, s.n_head, w.q_norm, s, ctx);
  const strata_tensor k = norm_and_rope(ops, a.k, a.k_alt, s.n_head_kv, w.k_norm, s, ctx);

  // Each sequence of the window stores its keys and values in its own slot and attends over that slot alone; its
  // columns of q, k, v, positions and the output are views into the window's buffers.
  for (const SlotRun& run : ctx.runs) {
    const int64_t c = run.column, m = run.n;
    const strata_tensor keys = ctx.kv.keys(il, run.slot);
    const strata_tensor values = ctx.kv.values(il, run.slot);
    const strata_tensor run_positions = tensor_i32(ctx.act.positions.data() + c, {m});
    const strata_tensor k_run = tensor_f32(static_cast<const float*>(k.data) + c * n_kv, {n_kv, m});
    const strata_tensor v_run = tensor_f32(a.v.data() + c * n_kv, {n_kv, m});
    for (const auto& [cache, src] : {std::pair{keys, k_run}, std::pair{values, v_run}}) {
      strata_op store = new_op(STRATA_OP_KV_STORE);
      store.dst = cache;
      store.src[0] = src;
      store.src[1] = run_positions;
      ops.push_back(store);
    }
    strata_op att = new_op(STRATA_OP_ATTENTION);
    att.dst = tensor_f32(a.attn.data() + c * n_q, {n_q, m});
    att.src[0] = tensor_f32(static_cast<const float*>(q.data) + c * n_q, {s.head_dim, s.n_head, m});
    att.src[1] = keys;
    att.src[2] = values;
    att.src[3] = run_positions;
    att.i[0] = static_cast<int32_t>(s.n_head);
    att.i[1] = static_cast<int32_t>(s.n_head_kv);
    att.i[2] = static_cast<int32_t>(s.sliding_window);
    att.f[0] = s.scale;
    if (w.sinks != nullptr) att.src4 = ctx.weight(w.sinks);
    ops.push_back(att);
  }
  linear(ops, ctx, rows_of(a.out, ctx.hp.n_embd, n), w.o, rows_of(a.attn, n_q, n), w.o_bias);
  add_into(ops, rows_of(a.x, ctx.hp.n_embd, n), rows_of(a.out, ctx.hp.n_embd, n));
}

void emit_dense_ffn(const LayerWeights& lw, const GraphContext& ctx, StageList& out) {
  Activations& a = ctx.act;
  const int64_t n = ctx.n_tok;
  const int64_t n_embd = ctx.hp.n_embd;
  const int64_t n_ff = lw.ffn_gate->ne[1];
  std::vector<strata_op>& ops = out.ops();
  rms_norm(ops, rows_of(a.xn, n_embd, n), rows_of(a.x, n_embd, n), ctx.weight(lw.ffn_norm), ctx.hp.rms_eps);
  linear(ops, ctx, rows_of(a.ffn_gate, n_ff, n), lw.ffn_gate, rows_of(a.xn, n_embd, n), lw.ffn_gate_bias);
  linear(ops, ctx, rows_of(a.ffn_up, n_ff, n), lw.ffn_up, rows_of(a.xn, n_embd, n), lw.ffn_up_bias);
  strata_op act = new_op(STRATA_OP_SWIGLU);
  act.dst = rows_of(a.ffn_gate, n_ff, n);
  act.src[0] = rows_of(a.ffn_gate, n_ff, n);
  act.src[1] = rows_of(a.ffn_up, n_ff, n);
  ops.push_back(act);
  linear(ops, ctx, rows_of(a.out, n_embd, n), lw.ffn_down, rows_of(a.ffn_gate, n_ff, n), lw.ffn_down_bias);
  add_into(ops, rows_of(a.x, n_embd, n), rows_of(a.out, n_embd, n));
}

void emit_shared_expert(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, std::vector<strata_op>& ops) {
  Activations& a = ctx.act;
  const int64_t n = ctx.n_tok;
  const int64_t n_embd = ctx.hp.n_embd;
  const SharedExperts& sh = lw.shared;
  if (sh.gate_inp != nullptr) {
    // qwen2moe: the shared expert weighted by sigmoid(gate_inp . x), as the one expert of a ROUTER with k = 1
    // (weight = the sigmoid, unnormalised, unscaled); an expert op computes it (MOE_ROUTED over the one-entry table
    // where the weights are on a device; the host path's MOE, built beside the routed one, otherwise).
    const strata_tensor xn = rows_of(a.xn, n_embd, n);
    linear(ops, ctx, rows_of(a.shared_gate_logit, 1, n), sh.gate_inp, xn, nullptr);
    strata_op gate = new_op(STRATA_OP_ROUTER);
    gate.dst = tensor_i32(a.shared_ids.data(), {1, n});
    gate.src[0] = rows_of(a.shared_gate_logit, 1, n);
    gate.src[2] = tensor_f32(a.shared_weights.data(), {1, n});
    gate.i[0] = 1;
    gate.i[1] = 1;  // sigmoid
    gate.i[2] = 0;
    gate.f[0] = 1.0f;
    ops.push_back(gate);
    if (const strata_expert_table* table = ctx.device != nullptr ? ctx.device->shared_table(il) : nullptr) {
      strata_op moe = new_op(STRATA_OP_MOE_ROUTED);
      moe.src[0] = xn;
      moe.src[1] = tensor_i32(a.shared_ids.data(), {1, n});
      moe.src[2] = tensor_f32(a.shared_weights.data(), {1, n});
      moe.dst = rows_of(a.shared_out, n_embd, n);
      moe.extra = table;
      ops.push_back(moe);
    }
    return;
  }
  const int64_t n_ff = sh.gate->ne[1];
  const strata_tensor xn = rows_of(a.xn, n_embd, n);
  linear(ops, ctx, rows_of(a.ffn_gate, n_ff, n), sh.gate, xn, nullptr);
  linear(ops, ctx, rows_of(a.ffn_up, n_ff, n), sh.up, xn, nullptr);
  strata_op act = new_op(STRATA_OP_SWIGLU);
  act.dst = rows_of(a.ffn_gate, n_ff, n);
  act.src[0] = rows_of(a.ffn_gate, n_ff, n);
  act.src[1] = rows_of(a.ffn_up, n_ff, n);
  ops.push_back(act);
  linear(ops, ctx, rows_of(a.shared_out, n_embd, n), sh.down, rows_of(a.ffn_gate, n_ff, n), nullptr);
}

void emit_moe_ffn(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) {
  Activations& a = ctx.act;
  const int64_t n = ctx.n_tok;
  const int64_t n_embd = ctx.hp.n_embd;
  const RoutingSpec& r = lw.routing;
  std::vector<strata_op>& ops = out.ops();
  rms_norm(ops, rows_of(a.xn, n_embd, n), rows_of(a.x, n_embd, n), ctx.weight(lw.ffn_norm), ctx.hp.rms_eps);
  linear(ops, ctx, rows_of(a.router_logits, r.n_expert, n), lw.router, rows_of(a.xn, n_embd, n), lw.router_bias);
  strata_op route = new_op(STRATA_OP_ROUTER);
  route.dst = tensor_i32(a.expert_ids.data(), {r.k, n});
  route.src[0] = rows_of(a.router_logits, r.n_expert, n);
  if (r.selection_bias != nullptr) route.src[1] = ctx.weight(r.selection_bias);
  route.src[2] = tensor_f32(a.expert_weights.data(), {r.k, n});
  route.i[0] = static_cast<int32_t>(r.k);
  route.i[1] = r.gating == GatingFunc::Sigmoid ? 1 : r.gating == GatingFunc::SoftmaxWeight ? 2 : 0;
  route.i[2] = r.normalize ? 1 : 0;
  route.f[0] = r.scale;
  route.i[3] = static_cast<int32_t>(r.n_group);
  route.i[4] = static_cast<int32_t>(r.topk_group);
  ops.push_back(route);
  // The routed sum lands in `out`; the shared expert's output (computed beside the routing, in `shared_out`) is
  // added to it, then `out` to the residual stream: out = routed, out = out + shared, x = x + out
  // (docs/CANONICAL_ARITHMETIC.md section 3).
  const bool shared = lw.shared.gate != nullptr;
  const auto add_out = [&](std::vector<strata_op>& list) {
    if (shared) add_into(list, rows_of(a.out, n_embd, n), rows_of(a.shared_out, n_embd, n));
    add_into(list, rows_of(a.x, n_embd, n), rows_of(a.out, n_embd, n));
  };
  const auto routed = [&](std::vector<strata_op>& list, const strata_expert_table* table, strata_tensor precomputed,
                          bool ready_flag = false, bool stamped = false) {
    strata_op moe = a.moe_routed(static_cast<uint32_t>(n_embd), r.k, static_cast<uint32_t>(n), table);
    moe.src[3] = precomputed;
    moe.i[0] = ready_flag ? 1 : 0;
    moe.i[3] = ready_flag && stamped ? 1 : 0;
    list.push_back(moe);
    add_out(list);
  };
  if (ctx.device != nullptr && ctx.placement != nullptr) {
    // The hybrid path: the host places the chosen experts, then MOE_ROUTED reads them (and the pool's rows). The
    // shared expert is a dense weight on the device: it runs while the host places (after the handoff in one
    // program, before the host step otherwise).
    ExpertPlacement* placement = ctx.placement;
    const auto n_tok = static_cast<uint32_t>(n);
    if (placement->one_program(n_tok)) {
      placement->emit_handoff(il, n_tok, ops);
      if (shared) emit_shared_expert(il, lw, ctx, ops);
      placement->emit_takeover(il, ops);
      routed(ops, placement->table(il), placement->precomputed_rows(n_tok, r.k), placement->rows_ready_flag(n_tok),
             placement->rows_stamped(n_tok));
      return;
    }
    if (shared) emit_shared_expert(il, lw, ctx, ops);
    out.host([placement, il, n_tok] { placement->place(il, n_tok); });
    routed(out.ops(), placement->table(il), placement->precomputed_rows(n_tok, r.k));
    return;
  }
  if (shared) emit_shared_expert(il, lw, ctx, ops);
  if (const strata_expert_table* table = ctx.device != nullptr ? ctx.device->expert_table(il) : nullptr) {
    // The weights are on the device: the experts are chosen there too, with no stop on the host.
    routed(ops, table, no_tensor());
    return;
  }
  const ExpertStack* experts = &lw.experts;
  const uint32_t k = r.k;
  const SharedExperts* gated = shared && lw.shared.gate_inp != nullptr ? &lw.shared : nullptr;
  out.host([il, experts, k, ctx, gated] {
    build_moe_op(il, *experts, k, ctx);
    if (gated != nullptr) build_shared_moe_op(*gated, ctx);
  });

  std::vector<strata_op>& after = out.ops();
  strata_op moe = new_op(STRATA_OP_MOE);
  moe.dst = rows_of(a.out, n_embd, n);
  moe.extra = &a.moe;
  after.push_back(moe);
  if (gated != nullptr) {
    strata_op sh = new_op(STRATA_OP_MOE);
    sh.dst = rows_of(a.shared_out, n_embd, n);
    sh.extra = &a.moe_shared;
    after.push_back(sh);
  }
  add_out(after);
}

void emit_ffn(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) {
  if (lw.has_experts()) {
    emit_moe_ffn(il, lw, ctx, out);
  } else {
    emit_dense_ffn(lw, ctx, out);
  }
}

}  // namespace graph

void Model::Graph::emit_layer(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) const {
  graph::emit_attention(il, lw, ctx, out);
  graph::emit_ffn(il, lw, ctx, out);
}

}  // namespace strata
