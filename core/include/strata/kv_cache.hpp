// The KV cache: per layer, per sequence slot, a key and a value matrix [kv_dim, n_ctx] of F16 or Q8_0 (one
// column per position, written by the KV_STORE op). Each slot has a length (positions filled); a slot can be cut
// back to a position (rejected draft tokens, a reused prompt prefix), after which the next window overwrites the
// columns from there on. Memory is reserved up front and touched only as positions are written.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata {

class KvCache {
 public:
  // type: F16 or Q8_0 (kv_dim a multiple of 32). In host memory, or in a device's (mem). Throws strata::Error for
  // other types or a zero size.
  // With `first_layer` and `held` (runtime.layer_split), memory only for layers [first_layer, first_layer + held)
  // of the n_layer: a card's own layers; another layer's matrices are refused.
  // With value_view > 0 (deepseek2's latent attention) there is no value matrix: values() is the keys' first
  // value_view columns (a view, rows the keys' stride), and the memory is half.
  KvCache(uint32_t n_layer, uint32_t kv_dim, uint32_t n_ctx, uint32_t n_slots, format::GgmlType type,
          DeviceMemory* mem = nullptr, uint32_t first_layer = 0, uint32_t held = UINT32_MAX, uint32_t value_view = 0);

  // The bytes such a cache takes for `held` layers (64-bit throughout: 262,144 positions x 48 layers of q8_0 are
  // 12.75 GiB).
  static uint64_t bytes_for(uint32_t held, uint32_t kv_dim, uint32_t n_ctx, uint32_t n_slots, format::GgmlType type,
                            uint32_t value_view = 0);

  format::GgmlType type() const { return type_; }
  uint32_t n_layer() const { return n_layer_; }
  uint32_t kv_dim() const { return kv_dim_; }
  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_slots() const { return static_cast<uint32_t>(length_.size()); }
  uint64_t bytes() const { return bytes_; }

  // Layer `layer`'s key (value) matrix of `slot`, as the KV_STORE and ATTENTION ops take it.
  strata_tensor keys(uint32_t layer, uint32_t slot) const;
  strata_tensor values(uint32_t layer, uint32_t slot) const;

  // Positions of `slot` that hold keys and values.
  uint32_t length(uint32_t slot) const;
  // Throws strata::Error unless a window of n tokens can be written at first_position: it continues the
  // sequence (first_position == length) and fits in n_ctx.
  void check_window(uint32_t slot, uint32_t first_position, uint32_t n) const;
  // After a window ran: the slot holds positions [0, length).
  void set_length(uint32_t slot, uint32_t length);
  // Forgets positions >= position (position <= length). Throws strata::Error otherwise.
  void cut(uint32_t slot, uint32_t position);

 private:
  strata_tensor matrix(uint32_t layer, uint32_t slot, uint32_t which) const;
  format::GgmlType type_;
  uint32_t n_layer_, kv_dim_, n_ctx_;
  uint32_t first_layer_ = 0, held_ = 0;  // the layers with memory here
  uint32_t value_view_ = 0;              // > 0: values are the keys' first columns (no matrix of their own)
  uint64_t column_bytes_, matrix_bytes_, bytes_;
  Buffer<unsigned char> data_;
  std::vector<uint32_t> length_;
};

}  // namespace strata
