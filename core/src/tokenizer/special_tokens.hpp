// Special-token splitting: before a tokenizer runs, the texts of control, unknown and user-defined tokens are
// cut out of the input as whole tokens. As in llama.cpp, longer texts are matched first (each text claims its
// occurrences, left to right, in what earlier texts left), user-defined tokens always, control and unknown ones
// only when asked (parse_special).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "vocab.hpp"

namespace strata::tokenizer_detail {

struct Fragment {
  uint32_t begin, end;  // bytes of the input
  TokenId token;        // kNoToken for text still to be tokenized
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Splits `text` into raw-text fragments and special tokens, in order. Empty text gives no fragments.
  void partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> children;  // sorted by byte
    TokenId token = kNoToken;
  };
  struct Candidate {
    uint32_t priority;  // 0 first: longest text, then lowest id
    bool always;        // user-defined: matched even without parse_special
  };
  uint32_t child(uint32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;                  // a trie of the candidates' texts; node 0 is the root
  std::vector<Candidate> candidate_;         // by token id (unused entries for other tokens)
  std::array<bool, 256> first_byte_{};       // a candidate text starts with this byte
  bool any_always_ = false;
  bool any_ = false;
};

}  // namespace strata::tokenizer_detail
