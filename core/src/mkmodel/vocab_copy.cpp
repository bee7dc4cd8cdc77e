#include <string>

#include "strata/error.hpp"
#include "vocab.hpp"

namespace strata::mkmodel {

uint32_t copy_vocab(gguf::Writer& w, const gguf::Metadata& source) {
  const auto tokens = source.find_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) {
    throw Error(source.file_name() + ": has no tokenizer.ggml.tokens; --vocab needs a GGUF with a vocabulary");
  }
  for (const gguf::KeyValue& kv : source.entries()) {
    if (kv.key.substr(0, 10) == "tokenizer.") w.set_value(kv.key, kv.value);
  }
  return static_cast<uint32_t>(tokens->size());
}

}  // namespace strata::mkmodel
