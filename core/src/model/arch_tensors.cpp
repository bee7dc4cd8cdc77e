#include "arch_tensors.hpp"

#include <string>

namespace strata {
namespace arch_detail {

void TensorList::add(std::string name, std::initializer_list<uint64_t> ne, Need need,
                     std::vector<std::string> replaces) {
  specs_.push_back(TensorSpec{std::move(name), std::vector<uint64_t>(ne), need == Need::Required, std::move(replaces)});
}

void TensorList::add(uint32_t il, std::string_view stem, std::string_view suffix, std::initializer_list<uint64_t> ne,
                     Need need, std::vector<std::string> replaces) {
  add(block_name(il, stem, suffix), ne, need, std::move(replaces));
}

std::string block_name(uint32_t il, std::string_view stem, std::string_view suffix) {
  std::string name = "blk." + std::to_string(il) + ".";
  name += stem;
  name += '.';
  name += suffix;
  return name;
}

void add_embeddings_and_head(TensorList& t, const HParams& hp, Need output) {
  t.add("token_embd.weight", {hp.n_embd, hp.n_vocab});
  t.add("output_norm.weight", {hp.n_embd});
  t.add("output.weight", {hp.n_embd, hp.n_vocab}, output);
}

void add_qkv(TensorList& t, uint32_t il, uint64_t n_in, uint64_t n_q, uint64_t n_k, uint64_t n_v) {
  t.add(il, "attn_qkv", "weight", {n_in, n_q + n_k + n_v}, Need::Optional,
        {block_name(il, "attn_q", "weight"), block_name(il, "attn_k", "weight"), block_name(il, "attn_v", "weight")});
  t.add(il, "attn_qkv", "bias", {n_q + n_k + n_v}, Need::Optional);
  t.add(il, "attn_q", "weight", {n_in, n_q});
  t.add(il, "attn_k", "weight", {n_in, n_k});
  t.add(il, "attn_v", "weight", {n_in, n_v});
  t.add(il, "attn_q", "bias", {n_q}, Need::Optional);
  t.add(il, "attn_k", "bias", {n_k}, Need::Optional);
  t.add(il, "attn_v", "bias", {n_v}, Need::Optional);
}

void add_dense_ffn(TensorList& t, uint32_t il, uint64_t n_embd, uint64_t n_ff) {
  t.add(il, "ffn_gate", "weight", {n_embd, n_ff});
  t.add(il, "ffn_down", "weight", {n_ff, n_embd});
  t.add(il, "ffn_up", "weight", {n_embd, n_ff});
}

void add_routed_experts(TensorList& t, uint32_t il, const HParams& hp, bool fused_gate_up_allowed) {
  const uint64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
  if (fused_gate_up_allowed) {
    t.add(il, "ffn_gate_up_exps", "weight", {n_embd, 2 * n_ff, n_expert}, Need::Optional,
          {block_name(il, "ffn_gate_exps", "weight"), block_name(il, "ffn_up_exps", "weight")});
  }
  t.add(il, "ffn_gate_exps", "weight", {n_embd, n_ff, n_expert});
  t.add(il, "ffn_down_exps", "weight", {n_ff, n_embd, n_expert});
  t.add(il, "ffn_up_exps", "weight", {n_embd, n_ff, n_expert});
}

void add_shared_experts(TensorList& t, uint32_t il, const HParams& hp) {
  t.add(il, "ffn_gate_shexp", "weight", {hp.n_embd, hp.n_ff_shexp});
  t.add(il, "ffn_down_shexp", "weight", {hp.n_ff_shexp, hp.n_embd});
  t.add(il, "ffn_up_shexp", "weight", {hp.n_embd, hp.n_ff_shexp});
}

void add_nextn(TensorList& t, uint32_t il, const HParams& hp, Need need) {
  t.add(il, "nextn.eh_proj", "weight", {2 * uint64_t{hp.n_embd}, hp.n_embd}, need);
  t.add(il, "nextn.enorm", "weight", {hp.n_embd}, need);
  t.add(il, "nextn.hnorm", "weight", {hp.n_embd}, need);
  t.add(il, "nextn.embed_tokens", "weight", {hp.n_embd, hp.n_vocab}, Need::Optional);
  t.add(il, "nextn.shared_head_head", "weight", {hp.n_embd, hp.n_vocab}, Need::Optional);
  t.add(il, "nextn.shared_head_norm", "weight", {hp.n_embd}, Need::Optional);
}

}  // namespace arch_detail

std::vector<TensorSpec> expected_tensors(const HParams& hp) {
  switch (hp.arch) {
    case Arch::Llama: return arch_detail::llama_tensors(hp);
    case Arch::Qwen3Moe: return arch_detail::qwen3moe_tensors(hp);
    case Arch::Qwen2Moe: return arch_detail::qwen2moe_tensors(hp);
    case Arch::Deepseek2: return arch_detail::deepseek2_tensors(hp);
    case Arch::GptOss: return arch_detail::gpt_oss_tensors(hp);
    case Arch::Glm4Moe: return arch_detail::glm4moe_tensors(hp);
    case Arch::Qwen3VlMoe: return arch_detail::qwen3moe_tensors(hp);  // the same tensors; M-RoPE is in the keys
  }
  return {};
}

}  // namespace strata
