// Internal: the builder every architecture's tensor list is written with, the pieces several architectures share,
// and one entry point per architecture (core/src/model/arch_<name>.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "strata/arch.hpp"

namespace strata::arch_detail {

enum class Need { Required, Optional };

class TensorList {
 public:
  // A tensor outside the blocks: "token_embd.weight".
  void add(std::string name, std::initializer_list<uint64_t> ne, Need need = Need::Required,
           std::vector<std::string> replaces = {});
  // A tensor of block il: stem "attn_q", suffix "weight" -> "blk.<il>.attn_q.weight".
  void add(uint32_t il, std::string_view stem, std::string_view suffix, std::initializer_list<uint64_t> ne,
           Need need = Need::Required, std::vector<std::string> replaces = {});

  std::vector<TensorSpec> take() { return std::move(specs_); }

 private:
  std::vector<TensorSpec> specs_;
};

std::string block_name(uint32_t il, std::string_view stem, std::string_view suffix);

// token_embd, output_norm and output ([n_embd, n_vocab]; optional where the head may be tied to the embeddings).
void add_embeddings_and_head(TensorList& t, const HParams& hp, Need output);

// attn_q/k/v with optional biases, or a fused attn_qkv in their place.
void add_qkv(TensorList& t, uint32_t il, uint64_t n_in, uint64_t n_q, uint64_t n_k, uint64_t n_v);

// ffn_gate/ffn_up [n_embd, n_ff] and ffn_down [n_ff, n_embd].
void add_dense_ffn(TensorList& t, uint32_t il, uint64_t n_embd, uint64_t n_ff);

// ffn_gate_exps/ffn_up_exps [n_embd, n_ff, E] (or a fused ffn_gate_up_exps [n_embd, 2 n_ff, E] where the
// architecture's loader accepts one) and ffn_down_exps [n_ff, n_embd, E].
void add_routed_experts(TensorList& t, uint32_t il, const HParams& hp, bool fused_gate_up_allowed);

// ffn_gate_shexp/ffn_up_shexp [n_embd, n_ff_shexp] and ffn_down_shexp [n_ff_shexp, n_embd].
void add_shared_experts(TensorList& t, uint32_t il, const HParams& hp);

// The next-token-prediction block's own tensors (eh_proj, enorm, hnorm, and the optional head copies).
void add_nextn(TensorList& t, uint32_t il, const HParams& hp, Need need);

std::vector<TensorSpec> llama_tensors(const HParams& hp);
std::vector<TensorSpec> qwen3moe_tensors(const HParams& hp);
std::vector<TensorSpec> qwen2moe_tensors(const HParams& hp);
std::vector<TensorSpec> deepseek2_tensors(const HParams& hp);
std::vector<TensorSpec> gpt_oss_tensors(const HParams& hp);
std::vector<TensorSpec> glm4moe_tensors(const HParams& hp);

}  // namespace strata::arch_detail
