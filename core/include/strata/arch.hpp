// The tensors each architecture needs, with their exact shapes, and the check of a file against them. Names and
// shapes are llama.cpp's (the per-architecture loaders in src/models/*.cpp); shapes are in ggml's ne order:
// ne[0] is the contiguous dimension, so a matrix mapping n_embd inputs to n_ff outputs is [n_embd, n_ff] and a
// stack of E such experts is [n_embd, n_ff, E].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"

namespace strata {

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  bool required = true;
  // A fused form: when this tensor is present, the named ones need not be (attn_qkv for attn_q/k/v,
  // ffn_gate_up_exps for ffn_gate_exps and ffn_up_exps).
  std::vector<std::string> replaces;
};

struct ArchIssue {
  enum class Kind {
    Missing,     // a required tensor is absent
    Shape,       // present with other dimensions
    Unexpected,  // present but not a tensor of this architecture (llama.cpp refuses such files)
  };
  Kind kind;
  std::string tensor;
  std::string message;  // "blk.3.ffn_down_exps.weight: shape [768, 2048, 128] expected, file has [...]"
};

// The tensors of a model with these hyperparameters, in llama.cpp's load order: token_embd, output_norm, output,
// then block by block.
std::vector<TensorSpec> expected_tensors(const HParams& hp);

// Every missing, misshapen or unexpected tensor of the model, in expected order (unexpected ones last).
std::vector<ArchIssue> check_tensors(const HParams& hp, const gguf::Model& model);

class ArchError : public Error {
 public:
  using Error::Error;
};

// For loading a model to run it: throws ArchError listing every missing or misshapen tensor (one per line);
// unexpected tensors are logged as warnings, since they do not stop the model from running.
void require_valid(const HParams& hp, const gguf::Model& model);

// "[768, 2048, 128]"
std::string format_shape(const std::vector<uint64_t>& ne);

}  // namespace strata
