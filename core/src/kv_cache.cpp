#include "strata/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "strata/error.hpp"
#include "strata/op_tensor.hpp"

namespace strata {

uint64_t KvCache::bytes_for(uint32_t held, uint32_t kv_dim, uint32_t n_ctx, uint32_t n_slots, format::GgmlType type,
                            uint32_t value_view) {
  return uint64_t{format::row_bytes(type, kv_dim)} * n_ctx * (value_view > 0 ? 1 : 2) * held * n_slots;
}

KvCache::KvCache(uint32_t n_layer, uint32_t kv_dim, uint32_t n_ctx, uint32_t n_slots, format::GgmlType type,
                 DeviceMemory* mem, uint32_t first_layer, uint32_t held, uint32_t value_view)
    : type_(type), n_layer_(n_layer), kv_dim_(kv_dim), n_ctx_(n_ctx), value_view_(value_view), length_(n_slots, 0) {
  // F32 is for exactness checks against llama.cpp's F32 cache (the reference backend stores it; the launch keys offer
  // f16 and q8_0 only).
  if (type != format::GgmlType::F16 && type != format::GgmlType::Q8_0 && type != format::GgmlType::F32) {
    throw Error("KV cache type " + std::string(format::traits(type).name) + " is not supported; use f16 or q8_0");
  }
  if (n_layer == 0 || kv_dim == 0 || n_ctx == 0 || n_slots == 0) {
    throw Error("KV cache: layers, width, context and slots must all be positive (got " + std::to_string(n_layer) +
                ", " + std::to_string(kv_dim) + ", " + std::to_string(n_ctx) + ", " + std::to_string(n_slots) + ")");
  }
  if (type == format::GgmlType::Q8_0 && kv_dim % 32 != 0) {
    throw Error("KV cache: a q8_0 cache needs a key/value width that is a multiple of 32; this model's is " +
                std::to_string(kv_dim) + " (runtime.kv_type: f16 works)");
  }
  if (first_layer >= n_layer) {
    throw Error("KV cache: first layer " + std::to_string(first_layer) + " of " + std::to_string(n_layer));
  }
  if (value_view > kv_dim || (type == format::GgmlType::Q8_0 && value_view % 32 != 0)) {
    throw Error("KV cache: values as the keys' first " + std::to_string(value_view) + " columns of " +
                std::to_string(kv_dim) + " (a q8_0 cache needs whole blocks of 32)");
  }
  first_layer_ = first_layer;
  held_ = std::min(held, n_layer - first_layer);
  column_bytes_ = format::row_bytes(type, kv_dim);
  matrix_bytes_ = column_bytes_ * n_ctx;
  bytes_ = bytes_for(held_, kv_dim, n_ctx, n_slots, type, value_view);
  // Left uninitialised: a column is read only after KV_STORE wrote it, so untouched pages stay unmapped.
  data_ = Buffer<unsigned char>(bytes_, mem, HostInit::Untouched);
}

strata_tensor KvCache::matrix(uint32_t layer, uint32_t slot, uint32_t which) const {
  if (layer < first_layer_ || layer - first_layer_ >= held_ || slot >= n_slots()) {
    throw Error("KV cache: layer " + std::to_string(layer) + " slot " + std::to_string(slot) + " out of range");
  }
  const uint64_t per = value_view_ > 0 ? 1 : 2;
  const uint64_t index = (static_cast<uint64_t>(slot) * held_ + (layer - first_layer_)) * per + which;
  return make_tensor(data_.data() + index * matrix_bytes_, type_, {kv_dim_, n_ctx_});
}

strata_tensor KvCache::keys(uint32_t layer, uint32_t slot) const { return matrix(layer, slot, 0); }

strata_tensor KvCache::values(uint32_t layer, uint32_t slot) const {
  if (value_view_ == 0) return matrix(layer, slot, 1);
  // The keys' first columns, each row still the keys' stride apart.
  strata_tensor v = matrix(layer, slot, 0);
  v.ne[0] = value_view_;
  return v;
}

uint32_t KvCache::length(uint32_t slot) const { return length_.at(slot); }

void KvCache::check_window(uint32_t slot, uint32_t first_position, uint32_t n) const {
  if (slot >= n_slots()) {
    throw Error("slot " + std::to_string(slot) + " does not exist; runtime.slots is " + std::to_string(n_slots()));
  }
  if (first_position != length_[slot]) {
    throw Error("a window at position " + std::to_string(first_position) + " does not continue slot " +
                std::to_string(slot) + ", which holds " + std::to_string(length_[slot]) +
                " positions (cut it back first)");
  }
  if (static_cast<uint64_t>(first_position) + n > n_ctx_) {
    throw Error("the context is full: " + std::to_string(first_position) + " + " + std::to_string(n) +
                " tokens exceed runtime.context " + std::to_string(n_ctx_));
  }
}

void KvCache::set_length(uint32_t slot, uint32_t length) {
  if (length > n_ctx_) throw Error("KV cache: length " + std::to_string(length) + " exceeds the context");
  length_.at(slot) = length;
}

void KvCache::cut(uint32_t slot, uint32_t position) {
  if (position > length(slot)) {
    throw Error("cannot cut slot " + std::to_string(slot) + " back to position " + std::to_string(position) +
                ": it holds only " + std::to_string(length(slot)) + " positions");
  }
  length_[slot] = position;
}

}  // namespace strata
