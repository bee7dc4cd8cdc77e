// The pair merging that BPE (by merge rank) and SentencePiece (by score) share: a word is a doubly linked list of
// symbols (byte ranges); candidate pairs wait in a priority queue, and the best is merged into its left symbol
// unless either side has changed since it was queued; the new neighbours are then offered as pairs.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::tokenizer_detail {

struct Symbol {
  uint32_t begin;   // where its bytes start in the word's spelling
  uint32_t length;  // 0 once merged into its left neighbour
  int32_t prev, next;
};

// Pops `queue` (Bigrams with left, right and the pair's `length` when queued) until it is empty; offer(left, right)
// queues the pair of two symbols when the vocabulary has it (either index may be -1: no neighbour).
template <class Queue, class Offer>
void merge_symbols(std::vector<Symbol>& symbols, Queue& queue, Offer&& offer) {
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) offer(i - 1, i);
  while (!queue.empty()) {
    const auto b = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(b.left)];
    Symbol& right = symbols[static_cast<size_t>(b.right)];
    if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = b.left;
    offer(left.prev, b.left);
    offer(b.left, left.next);
  }
}

}  // namespace strata::tokenizer_detail
