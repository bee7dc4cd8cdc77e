// deepseek2 (DeepSeek-V3/R1, Kimi-K2) with multi-head latent attention in its absorbed form, as llama.cpp computes it
// (src/models/deepseek2.cpp; ../shared/data/arch/README.md describes it):
//   q = Wq_b rms(Wq_a h) (or Wq h without the q LoRA): per head qk_nope values, then qk_rope;
//   [c; k_pe] = Wkv_a h: the latent c (kv_lora_rank) is RMS-normed, k_pe (qk_rope, one for all heads) rotated;
//   the cache holds one column [c; k_pe] per position, and the values are its first kv_lora_rank columns (a view);
//   per head the query becomes [K_b[h] q_nope; rope(q_pe)] (MUL_MAT over the stack attn_k_b), one KV head, the
//   score scale 1 / sqrt(qk_nope + qk_rope) (YaRN: m^2 / sqrt(..), m = 1 + yarn_log_multiplier ln(factor), with cos
//   and sin unscaled), the head's output mapped by V_b[h] (the stack attn_v_b), then attn_output.
// Leading dense blocks, then MoE blocks: the sigmoid (or softmax) router with the selection bias exp_probs_b and
// DeepSeek-V3's expert groups, plus the shared expert. Trailing nextn (MTP) blocks are skipped, as in glm4moe.
#include <cmath>
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"
#include "strata/op_tensor.hpp"

namespace strata {
namespace {

// A float view with its own row strides (in floats): ne0 values per row, rows s1 apart, planes s2 apart.
strata_tensor strided(const float* data, int64_t ne0, int64_t ne1, int64_t ne2, int64_t s1, int64_t s2) {
  strata_tensor t = tensor_f32(data, {ne0, ne1, ne2});
  t.nb[1] = static_cast<uint64_t>(s1) * sizeof(float);
  t.nb[2] = static_cast<uint64_t>(s2) * sizeof(float);
  t.nb[3] = t.nb[2] * static_cast<uint64_t>(ne2);
  return t;
}

// The latent attention's sizes, from the hyperparameters.
struct Mla {
  int64_t n_head, rope, nope, latent, v_head;
  int64_t q_head() const { return nope + rope; }     // a head of q as Wq_b gives it
  int64_t key() const { return latent + rope; }      // a cache column, and a head of the absorbed query
};

Mla mla_of(const HParams& hp) {
  return Mla{hp.n_head, hp.n_rot, static_cast<int64_t>(hp.head_dim_k_mla) - hp.n_rot, hp.kv_lora_rank,
             hp.head_dim_v_mla};
}

class Deepseek2Graph final : public Model::Graph {
 public:
  void bind(const gguf::Model& file, const HParams& hp, ModelWeights& w) const override {
    if (!hp.is_mla()) {
      throw Error(file.name() + ": deepseek2 without attention.key_length_mla (one attn_kv_b instead of attn_k_b and "
                                "attn_v_b) is not supported; convert it with a llama.cpp newer than 2025-06");
    }
    if (hp.head_dim_k != hp.kv_lora_rank + hp.n_rot || hp.head_dim_v != hp.kv_lora_rank || hp.n_head_kv != 1) {
      throw Error(file.name() + ": a latent-attention file has key_length = kv_lora_rank + rope dims, value_length = "
                                "kv_lora_rank and one KV head; this one has " +
                  std::to_string(hp.head_dim_k) + ", " + std::to_string(hp.head_dim_v) + " and " +
                  std::to_string(hp.n_head_kv));
    }
    graph::bind_embeddings_and_head(file, w);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer_main(); ++il) {
      LayerWeights& lw = w.layers[il];
      AttentionWeights& a = lw.attn;
      a.norm = graph::need(file, il, "attn_norm");
      if (hp.q_lora_rank > 0) {
        a.q_a = graph::need(file, il, "attn_q_a");
        a.q_a_norm = graph::need(file, il, "attn_q_a_norm");
        a.q_b = graph::need(file, il, "attn_q_b");
      } else {
        a.q = graph::need(file, il, "attn_q");
      }
      a.kv_a_mqa = graph::need(file, il, "attn_kv_a_mqa");
      a.kv_a_norm = graph::need(file, il, "attn_kv_a_norm");
      a.k_b = graph::need(file, il, "attn_k_b");
      a.v_b = graph::need(file, il, "attn_v_b");
      a.o = graph::need(file, il, "attn_output");
      lw.attn_spec = spec(hp);
      lw.ffn_norm = graph::need(file, il, "ffn_norm");
      if (!hp.layer_has_experts(il)) {
        graph::bind_dense_ffn(file, il, lw);
        continue;
      }
      graph::bind_routed_experts(file, hp, il, lw);
      lw.routing.selection_bias = graph::maybe(file, il, "exp_probs_b", "bias");
      lw.routing.n_group = hp.n_expert_groups > 1 ? hp.n_expert_groups : 0;
      lw.routing.topk_group = hp.n_expert_groups > 1 ? hp.n_group_used : 0;
      if (hp.n_expert_shared > 0) graph::bind_shared_experts(file, il, lw);
    }
    graph::log_skipped_nextn(file, hp);
  }

  void emit_layer(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) const override {
    emit_latent_attention(il, lw, ctx, out);
    graph::emit_ffn(il, lw, ctx, out);
  }

 private:
  // The attention's spec: adjacent-pair RoPE on the rope dims; the absorbed head is key() wide but the score scale
  // is the unabsorbed head's; YaRN moves the scale instead of cos and sin.
  static AttentionSpec spec(const HParams& hp) {
    AttentionSpec s = graph::attention_spec(hp, /*rope_mode=*/0);
    const Mla m = mla_of(hp);
    s.n_head_kv = 1;
    s.head_dim = static_cast<uint32_t>(m.key());
    s.scale = 1.0f / std::sqrt(static_cast<float>(m.q_head()));
    if (hp.rope_scaling == RopeScaling::Yarn && s.rope_ext_factor != 0.0f) {
      const float mscale = 1.0f + hp.yarn_log_mul * std::log(1.0f / hp.rope_freq_scale);
      s.scale = mscale * mscale / std::sqrt(static_cast<float>(m.q_head()));
      s.rope_mscale = hp.rope_attn_factor;  // llama.cpp cancels YaRN's growth of cos and sin for deepseek2
    }
    return s;
  }

  static void emit_latent_attention(uint32_t il, const LayerWeights& lw, const GraphContext& ctx, StageList& out) {
    const AttentionSpec& s = lw.attn_spec;
    const AttentionWeights& w = lw.attn;
    const Mla m = mla_of(ctx.hp);
    Activations& a = ctx.act;
    const int64_t n = ctx.n_tok;
    const int64_t n_embd = ctx.hp.n_embd;
    std::vector<strata_op>& ops = out.ops();
    using graph::rows_of;
    graph::rms_norm(ops, rows_of(a.xn, n_embd, n), rows_of(a.x, n_embd, n), ctx.weight(w.norm), ctx.hp.rms_eps);
    const strata_tensor xn = rows_of(a.xn, n_embd, n);

    // q per head [nope; rope] into q_alt (the FFN buffers hold the q LoRA's rank meanwhile).
    const int64_t q_width = m.n_head * m.q_head();
    if (w.q_a != nullptr) {
      const int64_t rank = ctx.hp.q_lora_rank;
      graph::linear(ops, ctx, rows_of(a.ffn_gate, rank, n), w.q_a, xn, nullptr);
      graph::rms_norm(ops, rows_of(a.ffn_up, rank, n), rows_of(a.ffn_gate, rank, n), ctx.weight(w.q_a_norm),
                      ctx.hp.rms_eps);
      graph::linear(ops, ctx, rows_of(a.q_alt, q_width, n), w.q_b, rows_of(a.ffn_up, rank, n), nullptr);
    } else {
      graph::linear(ops, ctx, rows_of(a.q_alt, q_width, n), w.q, xn, nullptr);
    }
    // [c; k_pe] into k_alt; the cache column [rms(c); rope(k_pe)] into k.
    const int64_t key = m.key();
    graph::linear(ops, ctx, rows_of(a.k_alt, key, n), w.kv_a_mqa, xn, nullptr);
    graph::rms_norm(ops, strided(a.k.data(), m.latent, n, 1, key, key * n), strided(a.k_alt.data(), m.latent, n, 1, key, key * n),
                    ctx.weight(w.kv_a_norm), ctx.hp.rms_eps);
    graph::rope(ops, strided(a.k.data() + m.latent, m.rope, 1, n, key, key),
                strided(a.k_alt.data() + m.latent, m.rope, 1, n, key, key), s, ctx);
    // The absorbed query per head: [K_b[h] q_nope; rope(q_pe)], key() wide, into q.
    strata_op absorb = new_op(STRATA_OP_MUL_MAT);
    absorb.src[0] = ctx.weight(w.k_b);
    absorb.src[1] = strided(a.q_alt.data(), m.nope, m.n_head, n, m.q_head(), q_width);
    absorb.dst = strided(a.q.data(), m.latent, m.n_head, n, key, key * m.n_head);
    ops.push_back(absorb);
    graph::rope(ops, strided(a.q.data() + m.latent, m.rope, m.n_head, n, key, key * m.n_head),
                strided(a.q_alt.data() + m.nope, m.rope, m.n_head, n, m.q_head(), q_width), s, ctx);

    // Each sequence's keys into its slot; its values are the keys' first `latent` columns (KvCache's view).
    const int64_t n_out = m.latent * m.n_head;
    for (const SlotRun& run : ctx.runs) {
      const int64_t c = run.column, r = run.n;
      const strata_tensor keys = ctx.kv.keys(il, run.slot);
      const strata_tensor run_positions = tensor_i32(ctx.act.positions.data() + c, {r});
      strata_op store = new_op(STRATA_OP_KV_STORE);
      store.dst = keys;
      store.src[0] = tensor_f32(a.k.data() + c * key, {key, r});
      store.src[1] = run_positions;
      ops.push_back(store);
      strata_op att = new_op(STRATA_OP_ATTENTION);
      att.dst = tensor_f32(a.attn.data() + c * n_out, {n_out, r});
      att.src[0] = tensor_f32(a.q.data() + c * key * m.n_head, {key, m.n_head, r});
      att.src[1] = keys;
      att.src[2] = ctx.kv.values(il, run.slot);
      att.src[3] = run_positions;
      att.i[0] = static_cast<int32_t>(m.n_head);
      att.i[1] = 1;
      att.f[0] = s.scale;
      ops.push_back(att);
    }
    // Each head's latent output through V_b[h], then the output projection.
    strata_op expand = new_op(STRATA_OP_MUL_MAT);
    expand.src[0] = ctx.weight(w.v_b);
    expand.src[1] = tensor_f32(a.attn.data(), {m.latent, m.n_head, n});
    expand.dst = tensor_f32(a.q_alt.data(), {m.v_head, m.n_head, n});
    ops.push_back(expand);
    graph::linear(ops, ctx, rows_of(a.out, n_embd, n), w.o, rows_of(a.q_alt, m.v_head * m.n_head, n), nullptr);
    graph::add_into(ops, rows_of(a.x, n_embd, n), rows_of(a.out, n_embd, n));
  }
};

}  // namespace

std::unique_ptr<Model::Graph> make_deepseek2_graph() { return std::make_unique<Deepseek2Graph>(); }

}  // namespace strata
