#include "token_tiles.hpp"

#include <cstring>

namespace strata::cpu {

size_t tile_bytes(int64_t n) {
  const size_t spans = static_cast<size_t>(n / 32);
  return spans * (8 * 64 + 4 * kTileTokens * sizeof(float));
}

// Copied once per op (or per expert), then read by every row of the product: plain loops are enough here.
TokenTile make_tile(const QuantRow* acts, int count, int64_t n, void* mem) {
  const int64_t spans = n / 32;
  auto* base = static_cast<unsigned char*>(mem);
  auto* xt = reinterpret_cast<uint32_t*>(base);
  float* da = reinterpret_cast<float*>(base + static_cast<size_t>(spans) * 8 * 64);
  float* qlo_f = da + spans * kTileTokens;
  float* qhi_f = qlo_f + spans * kTileTokens;
  float* qsum_f = qhi_f + spans * kTileTokens;
  for (int t = 0; t < kTileTokens; ++t) {
    const QuantRow* a = t < count ? &acts[t] : nullptr;
    for (int64_t s = 0; s < spans; ++s) {
      for (int k = 0; k < 8; ++k) {
        uint32_t word = 0;
        if (a != nullptr) std::memcpy(&word, a->qs + 32 * s + 4 * k, sizeof(word));
        xt[(s * 8 + k) * kTileTokens + t] = word ^ 0x80808080u;  // q + 128 in each byte
      }
      const int64_t j = s * kTileTokens + t;
      da[j] = a != nullptr ? a->da[s] : 0.0f;
      qlo_f[j] = a != nullptr ? a->qlo_f[s] : 0.0f;
      qhi_f[j] = a != nullptr ? a->qhi_f[s] : 0.0f;
      qsum_f[j] = a != nullptr ? a->qsum_f[s] : 0.0f;
    }
  }
  return TokenTile{reinterpret_cast<const uint8_t*>(xt), da, qlo_f, qhi_f, qsum_f, count};
}

}  // namespace strata::cpu
