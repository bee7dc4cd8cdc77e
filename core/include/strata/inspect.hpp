// `strata inspect`: what a GGUF file holds and what it costs. File facts, every metadata key (long values
// summarized), the tensor table, bytes and bits per weight by part and by type, and for models the bytes one
// token reads (what decode speed depends on). Works on any well-formed GGUF: vocab-only files and lone tensors
// are fine; a model's missing parts are warnings here (errors only when loading for inference).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "strata/format/types.hpp"
#include "strata/gguf.hpp"
#include "strata/tensor_role.hpp"

namespace strata::inspect {

// How much of a long metadata value is shown.
struct Limits {
  size_t array_whole = 16;   // arrays up to this many elements are shown whole
  size_t array_head = 6;     // of longer arrays, the first this many
  size_t string_bytes = 80;  // strings longer than this are cut (at a UTF-8 boundary), their length shown
};

// A tally of tensors.
struct Tally {
  uint64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;

  void add(const gguf::TensorView& t);
  // Bits per weight: bytes * 8 / elements (0 for no elements).
  double bits_per_weight() const;
};

// One file of the model (a split model has several).
struct FileFacts {
  std::string path;
  uint32_t version = 0;
  uint32_t alignment = 0;
  uint64_t size = 0;
  uint64_t data_offset = 0;  // where its data section starts
  uint64_t tensors = 0;
  uint64_t metadata_keys = 0;
};

// The bytes one token reads in a decode step.
struct TokenReads {
  uint32_t n_expert = 0;  // 0: a dense model (no routed experts)
  uint32_t n_expert_used = 0;
  // Routed expert bytes read per token: for each layer, its routed-expert bytes x n_expert_used / n_expert.
  uint64_t routed = 0;
  // Everything else a token reads: attention, norms, router, shared experts, dense ffn, head, other, and one
  // embedding row (the whole table when the head is tied to it).
  uint64_t dense = 0;
  bool tied_head = false;  // no output.weight: the head reads token_embd

  uint64_t total() const { return routed + dense; }
};

struct Report {
  std::vector<FileFacts> files;                             // one per part, in order
  std::optional<std::string> architecture;                  // general.architecture, when the file is meant as a model
  std::vector<TensorRole> roles;                            // per tensor, in the order of Model::tensors()
  std::array<Tally, kTensorPartCount> by_part;              // indexed by TensorPart
  std::vector<std::pair<format::GgmlType, Tally>> by_type;  // ordered by type id
  Tally total;
  uint64_t data_bytes = 0;              // sum over files of (size - data_offset): tensor bytes plus alignment padding
  std::optional<TokenReads> per_token;  // for models with tensors, when the expert counts are known
  // The architecture's tensor check (missing, misshapen, unexpected tensors); nullopt when it did not run (not a
  // model, no tensors, unreadable hyperparameters).
  std::optional<std::vector<std::string>> arch_issues;
  std::vector<std::string> warnings;  // what could not be read or checked, and why; never fatal here

  const Tally& part(TensorPart p) const { return by_part[static_cast<size_t>(p)]; }
};

// Analyses an opened model. Never throws for a file the reader accepted.
Report analyze(const gguf::Model& model);

// A metadata value as one line of text: `u32 5`, `string "llama"`,
// `string of 5234 bytes: "{% for ..." ...`, `array of 151936 string: ["!", "\"", ... ]`.
// Strings are escaped (quotes, backslashes, control characters, bytes that are not UTF-8).
std::string describe_value(const gguf::Value& value, const Limits& limits = {});

// The whole report as text (what `strata inspect FILE` prints) or as one JSON object.
std::string render_text(const gguf::Model& model, const Report& report, const Limits& limits = {});
std::string render_json(const gguf::Model& model, const Report& report, const Limits& limits = {});

// The first n values of a tensor dequantized to f32 (all of them when the tensor has fewer). Throws
// strata::Error when strata has no decoder for the tensor's type.
std::vector<float> tensor_values(const gguf::TensorView& tensor, uint64_t n);
// Writes every value of a tensor as little-endian f32 (n_elements * 4 bytes), decoding a chunk at a time.
// Throws strata::Error for a type without a decoder or when the stream fails.
void write_tensor_f32(const gguf::TensorView& tensor, std::ostream& out);

// One tensor's facts and first values, as text or JSON (`strata inspect FILE --tensor NAME`).
std::string render_tensor_text(const gguf::TensorView& tensor, const std::vector<float>& values);
std::string render_tensor_json(const gguf::TensorView& tensor, const std::vector<float>& values);

}  // namespace strata::inspect
