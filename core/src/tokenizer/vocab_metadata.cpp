// The tokenizer.ggml.* keys of a GGUF, read into a VocabSpec.
#include "strata/error.hpp"
#include "strata/gguf.hpp"
#include "strata/tokenizer.hpp"

namespace strata {
namespace {

std::vector<std::string> copy_strings(std::span<const std::string_view> s) {
  return std::vector<std::string>(s.begin(), s.end());
}

}  // namespace

VocabSpec read_vocab_spec(const gguf::Metadata& md) {
  VocabSpec spec;
  spec.source = md.file_name();
  if (!md.contains("tokenizer.ggml.tokens")) {
    throw gguf::MetadataError(spec.source + ": metadata key 'tokenizer.ggml.tokens' is missing: this GGUF has no "
                              "vocabulary; use a GGUF converted with its tokenizer");
  }
  spec.model = std::string(md.get_string("tokenizer.ggml.model"));
  spec.pre = std::string(md.find_string("tokenizer.ggml.pre").value_or(""));
  spec.tokens = copy_strings(md.get_string_array("tokenizer.ggml.tokens"));

  if (const auto scores = md.find_array("tokenizer.ggml.scores")) {
    if (auto f = scores->to_f32()) {
      spec.scores = std::move(*f);
    } else if (auto i = scores->to_i64()) {
      // llama.cpp also takes integer scores.
      spec.scores.assign(i->begin(), i->end());
    } else {
      throw gguf::MetadataError(spec.source + ": metadata key 'tokenizer.ggml.scores' is " +
                                md.find("tokenizer.ggml.scores")->value.describe() + ", expected an array of f32");
    }
  }
  if (const auto types = md.find_array("tokenizer.ggml.token_type")) {
    auto t = types->to_i32();
    if (!t) {
      throw gguf::MetadataError(spec.source + ": metadata key 'tokenizer.ggml.token_type' is " +
                                md.find("tokenizer.ggml.token_type")->value.describe() +
                                ", expected an array of i32");
    }
    spec.types = std::move(*t);
  }
  if (const auto merges = md.find_string_array("tokenizer.ggml.merges")) spec.merges = copy_strings(*merges);

  spec.bos_id = md.find_i64("tokenizer.ggml.bos_token_id");
  spec.eos_id = md.find_i64("tokenizer.ggml.eos_token_id");
  spec.unk_id = md.find_i64("tokenizer.ggml.unknown_token_id");
  spec.add_bos = md.find_bool("tokenizer.ggml.add_bos_token");
  spec.add_eos = md.find_bool("tokenizer.ggml.add_eos_token");
  spec.add_space_prefix = md.find_bool("tokenizer.ggml.add_space_prefix");
  return spec;
}

}  // namespace strata
