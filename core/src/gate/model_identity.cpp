// What identifies the model a gate ran on: its file, its header (metadata and tensor infos) and its vocabulary,
// hashed so that a saved run can say whether a re-run's ids are comparable and whether it is the same file.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "strata/gate.hpp"
#include "strata/model.hpp"

namespace strata::gate {
namespace {

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The length first, so that the token list {"ab", "c"} hashes differently from {"a", "bc"}.
uint64_t hash_with_length(std::string_view text, uint64_t state) {
  uint8_t len[8];
  uint64_t n = text.size();
  for (uint8_t& b : len) {
    b = static_cast<uint8_t>(n & 0xff);
    n >>= 8;
  }
  state = fnv1a64(std::string_view(reinterpret_cast<const char*>(len), sizeof len), state);
  return fnv1a64(text, state);
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t state) {
  for (const char c : bytes) {
    state ^= static_cast<uint8_t>(c);
    state *= 0x100000001b3ULL;
  }
  return state;
}

ModelIdentity identify(const Model& model) {
  ModelIdentity id;
  const gguf::Model& file = model.file();
  id.file = std::filesystem::path(file.name()).filename().string();
  id.bytes = model.file_bytes();
  id.architecture = std::string(file.metadata().find_string("general.architecture").value_or(""));
  uint64_t header = kFnvOffset;
  for (size_t i = 0; i < file.part_count(); ++i) {
    const gguf::File& part = file.part(i);
    const std::span<const uint8_t> all = part.bytes();
    const std::span<const uint8_t> bytes = all.first(std::min<uint64_t>(part.data_offset(), all.size()));
    header = fnv1a64(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), header);
  }
  id.header_hash = hex16(header);
  const Tokenizer& tok = model.tokenizer();
  id.n_vocab = tok.size();
  uint64_t vocab = kFnvOffset;
  for (size_t t = 0; t < tok.size(); ++t) vocab = hash_with_length(tok.token_text(static_cast<TokenId>(t)), vocab);
  id.vocab_hash = hex16(vocab);
  return id;
}

}  // namespace strata::gate
