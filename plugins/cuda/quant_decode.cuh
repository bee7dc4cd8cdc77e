// Per weight type, a decoder of one 32-value span of a row into the canonical decomposition w_i = c_k * g_i + b_k
// (docs/CANONICAL_ARITHMETIC.md section 2): the integers g_i of the span and the scale c_k and offset b_k of its
// one or two sub-blocks, c_k and b_k formed with exactly the float operations of core/format's decompose_*
// (canonical_legacy.cpp, canonical_kquants.cpp, canonical_iquants.cpp, canonical_other.cpp). Every type's g_i
// fits in int8 (the widest are Q8_0's and IQ4's), so a span is eight words of four packed int8 values, element
// 4m + i in byte i of word m: ready for dot4 against a Q8_1 block.
//
// Loads: a type's kAlign is the alignment its 16- and 32-bit fields have when the row starts at a multiple of it;
// the ops check that the weight data and row stride are multiples of kAlign (plain byte loads for kAlign 1).
// The IQ lookup tables are read from device arrays generated from the same grid files as the format library's
// (device_grids.cuh, built by embed_device_grids.cmake); the host pass reads the format library's arrays.
#pragma once

#include <cstdint>
#include <cstring>

#include "canonical_math.cuh"
#include "strata/format/tables.hpp"
#include "strata/format/types.hpp"

#include "device_grids.cuh"  // both passes: the host pass registers the device arrays

#ifdef STRATA_DEVICE_PASS
#define STRATA_GRID(name) ::strata::gpu::grids::name
#else
#define STRATA_GRID(name) ::strata::format::name
#endif

namespace strata::gpu {

using format::GgmlType;

// One decoded span: g[m] packs elements 4m..4m+3; sub-block 0 is elements 0..15 (or all 32), sub-block 1 16..31.
struct Span {
  uint32_t g[8];
  float c[2];
  float b[2];
};

// ---- loads ------------------------------------------------------------------------------------------------

__host__ __device__ inline uint32_t ld8(const uint8_t* p) { return *p; }

template <int Align>
__host__ __device__ inline uint32_t ld16(const uint8_t* p) {
#ifdef STRATA_DEVICE_PASS
  if constexpr (Align >= 2) {
    return *reinterpret_cast<const uint16_t*>(p);
  } else {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
  }
#else
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}

template <int Align>
__host__ __device__ inline uint32_t ld32(const uint8_t* p) {
#ifdef STRATA_DEVICE_PASS
  if constexpr (Align >= 4) {
    return *reinterpret_cast<const uint32_t*>(p);
  } else {
    return ld16<Align>(p) | ld16<Align>(p + 2) << 16;
  }
#else
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}

// Eight words from n + 1 consecutive 4-byte aligned words a[] that hold them starting `shift` bits (0 or 16) into
// a[0]: word m is bits shift.. of a[m]:a[m+1].
template <int N>
__host__ __device__ inline void realign_words(const uint32_t (&a)[N + 1], int shift, uint32_t (&out)[N]) {
#pragma unroll
  for (int m = 0; m < N; ++m) {
    out[m] = static_cast<uint32_t>((static_cast<uint64_t>(a[m + 1]) << 32 | a[m]) >> shift);
  }
}

#ifdef STRATA_DEVICE_PASS
// N words at p (2-byte aligned) from N + 1 aligned 4-byte loads; the caller guarantees the bytes up to the next
// 4-byte boundary past p + 4N are readable.
template <int N>
__device__ inline void load_words_a2(const uint8_t* p, uint32_t (&out)[N]) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const auto* w = reinterpret_cast<const uint32_t*>(at & ~static_cast<uintptr_t>(3));
  uint32_t a[N + 1];
#pragma unroll
  for (int m = 0; m <= N; ++m) a[m] = w[m];
  realign_words<N>(a, static_cast<int>(at & 3u) * 8, out);
}
#endif

// ---- byte-lane arithmetic (no carries or borrows between the four bytes) ------------------------------------

// Byte-wise a - b modulo 256.
__host__ __device__ inline uint32_t sub_bytes(uint32_t a, uint32_t b) {
  constexpr uint32_t kHigh = 0x80808080u;
  return ((a | kHigh) - (b & ~kHigh)) ^ ((a ^ ~b) & kHigh);
}

// Bits 0..3 of x spread to bit 0 of bytes 0..3 (the partial products do not overlap, so no carries).
__host__ __device__ inline uint32_t spread4(uint32_t x) { return ((x & 15u) * 0x00204081u) & 0x01010101u; }

// Byte i of the result is 0xff where bit i of x is set (x's bits 0..3).
__host__ __device__ inline uint32_t sign_mask4(uint32_t x) { return spread4(x) * 0xffu; }

// Four values with the signs of bits 0..3 of `signs` applied (values below 128).
__host__ __device__ inline uint32_t apply_signs4(uint32_t v, uint32_t signs) {
  const uint32_t m = sign_mask4(signs);
  return sub_bytes(v & ~m, v & m);
}

__host__ __device__ inline int8_t iq4nl_value(uint32_t i) {
#ifdef STRATA_DEVICE_PASS
  return grids::kvalues_iq4nl[i];
#else
  return format::kvalues_iq4nl[i];
#endif
}
__host__ __device__ inline int8_t mxfp4_value(uint32_t i) {
#ifdef STRATA_DEVICE_PASS
  return grids::kvalues_mxfp4[i];
#else
  return format::kvalues_mxfp4[i];
#endif
}

// Table values of the low nibbles of v's four bytes (lo) and of their high nibbles (hi), packed as int8.
template <class Table>
__host__ __device__ inline void nibble_values(uint32_t v, Table table, uint32_t& lo, uint32_t& hi) {
  lo = hi = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    lo |= static_cast<uint32_t>(static_cast<uint8_t>(table((v >> (8 * i)) & 15u))) << (8 * i);
    hi |= static_cast<uint32_t>(static_cast<uint8_t>(table((v >> (8 * i + 4)) & 15u))) << (8 * i);
  }
}

// ---- the legacy 32-value formats --------------------------------------------------------------------------

struct DecodeQ4_0 {
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr int kElems = 32, kBytes = 18, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const uint32_t v = ld32<kAlign>(b + 2 + 4 * m);
      o.g[m] = sub_bytes(v & 0x0f0f0f0fu, 0x08080808u);
      o.g[m + 4] = sub_bytes((v >> 4) & 0x0f0f0f0fu, 0x08080808u);
    }
  }
};

struct DecodeQ4_1 {
  static constexpr GgmlType kType = GgmlType::Q4_1;
  static constexpr int kElems = 32, kBytes = 20, kSub = 32, kAlign = 4;
  static constexpr bool kOffset = true;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = half_to_float(ld16<kAlign>(b + 2));
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const uint32_t v = ld32<kAlign>(b + 4 + 4 * m);
      o.g[m] = v & 0x0f0f0f0fu;
      o.g[m + 4] = (v >> 4) & 0x0f0f0f0fu;
    }
  }
};

// Q5_0 / Q5_1: the fifth bit of element j is bit j of the 32-bit qh.
__host__ __device__ inline void q5_words(uint32_t qh, const uint32_t (&qs)[4], uint32_t (&g)[8]) {
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    g[m] = (qs[m] & 0x0f0f0f0fu) | spread4(qh >> (4 * m)) << 4;
    g[m + 4] = ((qs[m] >> 4) & 0x0f0f0f0fu) | spread4(qh >> (16 + 4 * m)) << 4;
  }
}

struct DecodeQ5_0 {
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr int kElems = 32, kBytes = 22, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = 0.0f;
    uint32_t qs[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) qs[m] = ld32<kAlign>(b + 6 + 4 * m);
    q5_words(ld32<kAlign>(b + 2), qs, o.g);
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = sub_bytes(o.g[m], 0x10101010u);
  }
};

struct DecodeQ5_1 {
  static constexpr GgmlType kType = GgmlType::Q5_1;
  static constexpr int kElems = 32, kBytes = 24, kSub = 32, kAlign = 4;
  static constexpr bool kOffset = true;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = half_to_float(ld16<kAlign>(b + 2));
    uint32_t qs[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) qs[m] = ld32<kAlign>(b + 8 + 4 * m);
    q5_words(ld32<kAlign>(b + 4), qs, o.g);
  }
};

struct DecodeQ8_0 {
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr int kElems = 32, kBytes = 34, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = ld32<kAlign>(b + 2 + 4 * m);
  }
};

// ---- K-quants (256-value super-blocks; span s of a block is values 32s..32s+31) ---------------------------

struct DecodeQ2_K {
  static constexpr GgmlType kType = GgmlType::Q2_K;
  static constexpr int kElems = 256, kBytes = 84, kSub = 16, kAlign = 4;
  static constexpr bool kOffset = true;
  // scales[16] @0, qs[64] @16, d @80, dmin @82. Span s: 2-bit field at shift 2*(s%4) of qs[32*(s/4) + i].
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b + 80));
    const float dmin = half_to_float(ld16<kAlign>(b + 82));
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const uint32_t sc = ld8(b + 2 * s + k);
      o.c[k] = d * static_cast<float>(sc & 15u);
      o.b[k] = -(dmin * static_cast<float>(sc >> 4));
    }
    const uint8_t* q = b + 16 + 32 * (s / 4);
    const int shift = 2 * (s % 4);
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = (ld32<kAlign>(q + 4 * m) >> shift) & 0x03030303u;
  }
};

struct DecodeQ3_K {
  static constexpr GgmlType kType = GgmlType::Q3_K;
  static constexpr int kElems = 256, kBytes = 110, kSub = 16, kAlign = 2;
  static constexpr bool kOffset = false;
  // hmask[32] @0, qs[64] @32, scales[12] @96, d @108. g = 2-bit q minus 4 where hmask bit s is clear.
  __host__ __device__ static int scale(const uint8_t* sc, int k) {
    const uint32_t low = k < 8 ? (ld8(sc + k) & 15u) : (ld8(sc + k - 8) >> 4);
    const uint32_t high = (ld8(sc + 8 + k % 4) >> (2 * (k / 4))) & 3u;
    return static_cast<int>(low | high << 4) - 32;
  }
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b + 108));
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      o.c[k] = d * static_cast<float>(scale(b + 96, 2 * s + k));
      o.b[k] = 0.0f;
    }
    const uint8_t* q = b + 32 + 32 * (s / 4);
    const int shift = 2 * (s % 4);
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const uint32_t v = (ld32<kAlign>(q + 4 * m) >> shift) & 0x03030303u;
      const uint32_t h = (ld32<kAlign>(b + 4 * m) >> s) & 0x01010101u;
      o.g[m] = sub_bytes(v, (h ^ 0x01010101u) << 2);
    }
  }
};

// Q4_K / Q5_K's packed 6-bit scale and min of sub-block j.
__host__ __device__ inline void scale_min_k4(const uint8_t* s, int j, uint32_t& sc, uint32_t& mn) {
  if (j < 4) {
    sc = ld8(s + j) & 63u;
    mn = ld8(s + j + 4) & 63u;
  } else {
    sc = (ld8(s + j + 4) & 15u) | (ld8(s + j - 4) >> 6) << 4;
    mn = (ld8(s + j + 4) >> 4) | (ld8(s + j) >> 6) << 4;
  }
}

// scale_min_k4 from the scales as three little-endian words (w1 = bytes 0..3, w2 = 4..7, w3 = 8..11), for a
// block header read with one 16-byte load.
__host__ __device__ inline void scale_min_k4_words(uint32_t w1, uint32_t w2, uint32_t w3, int j, uint32_t& sc,
                                                   uint32_t& mn) {
  const int sh = 8 * (j & 3);
  if (j < 4) {
    sc = (w1 >> sh) & 63u;
    mn = (w2 >> sh) & 63u;
  } else {
    const uint32_t hi = (w3 >> sh) & 255u;
    sc = (hi & 15u) | ((w1 >> sh) & 255u) >> 6 << 4;
    mn = (hi >> 4) | ((w2 >> sh) & 255u) >> 6 << 4;
  }
}

struct DecodeQ4_K {
  static constexpr GgmlType kType = GgmlType::Q4_K;
  static constexpr int kElems = 256, kBytes = 144, kSub = 32, kAlign = 4;
  static constexpr bool kOffset = true;
  // The span from the 16-byte header h (d, dmin, scales) and its 32 quant bytes as eight words.
  __host__ __device__ static void from_words(const uint32_t (&h)[4], const uint32_t (&qw)[8], int s, Span& o) {
    uint32_t sc, mn;
    scale_min_k4_words(h[1], h[2], h[3], s, sc, mn);
    o.c[0] = half_to_float(static_cast<uint16_t>(h[0])) * static_cast<float>(sc);
    o.b[0] = -(half_to_float(static_cast<uint16_t>(h[0] >> 16)) * static_cast<float>(mn));
    const int shift = 4 * (s % 2);
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = (qw[m] >> shift) & 0x0f0f0f0fu;
  }
  // A block at a 16-byte boundary: three 16-byte loads per span.
  __device__ static void decode_aligned(const uint8_t* b, int s, Span& o) {
    const uint4 hv = reinterpret_cast<const uint4*>(b)[0];
    const uint4* qv = reinterpret_cast<const uint4*>(b + 16 + 32 * (s / 2));
    const uint4 q0 = qv[0], q1 = qv[1];
    const uint32_t h[4] = {hv.x, hv.y, hv.z, hv.w};
    const uint32_t qw[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    from_words(h, qw, s, o);
  }
  // d @0, dmin @2, scales[12] @4, qs[128] @16. Span s: nibble s%2 of qs[32*(s/2) + i].
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
#ifdef STRATA_DEVICE_PASS
    // Rows at 16-byte boundaries (144-byte blocks keep it).
    if ((reinterpret_cast<uintptr_t>(b) & 15u) == 0) {
      decode_aligned(b, s, o);
      return;
    }
#endif
    const uint32_t dd = ld32<kAlign>(b);
    uint32_t sc, mn;
    scale_min_k4(b + 4, s, sc, mn);
    o.c[0] = half_to_float(static_cast<uint16_t>(dd)) * static_cast<float>(sc);
    o.b[0] = -(half_to_float(static_cast<uint16_t>(dd >> 16)) * static_cast<float>(mn));
    const uint8_t* q = b + 16 + 32 * (s / 2);
    const int shift = 4 * (s % 2);
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = (ld32<kAlign>(q + 4 * m) >> shift) & 0x0f0f0f0fu;
  }
};

struct DecodeQ5_K {
  static constexpr GgmlType kType = GgmlType::Q5_K;
  static constexpr int kElems = 256, kBytes = 176, kSub = 32, kAlign = 4;
  static constexpr bool kOffset = true;
  // d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48. The fifth bit of span s is bit s of qh[i].
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const uint32_t dd = ld32<kAlign>(b);
    uint32_t sc, mn;
    scale_min_k4(b + 4, s, sc, mn);
    o.c[0] = half_to_float(static_cast<uint16_t>(dd)) * static_cast<float>(sc);
    o.b[0] = -(half_to_float(static_cast<uint16_t>(dd >> 16)) * static_cast<float>(mn));
    const uint8_t* q = b + 48 + 32 * (s / 2);
    const int shift = 4 * (s % 2);
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const uint32_t low = (ld32<kAlign>(q + 4 * m) >> shift) & 0x0f0f0f0fu;
      const uint32_t high = (ld32<kAlign>(b + 16 + 4 * m) >> s) & 0x01010101u;
      o.g[m] = low | high << 4;
    }
  }
};

struct DecodeQ6_K {
  static constexpr GgmlType kType = GgmlType::Q6_K;
  static constexpr int kElems = 256, kBytes = 210, kSub = 16, kAlign = 2;
  static constexpr bool kOffset = false;
  // ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208. Span s = 4*half + quarter: low nibbles of
  // ql[64*half + 32*(quarter%2) + i] (high nibbles for quarters 2, 3), two bits at 2*quarter of qh[32*half + i].
  // The span from its eight ql words, eight qh words, its two scale bytes (sc2 = scales[2s] | scales[2s+1] << 8)
  // and d's bits.
  __host__ __device__ static void from_words(const uint32_t (&lw)[8], const uint32_t (&hw)[8], uint32_t sc2,
                                             uint32_t dbits, int s, Span& o) {
    const float d = half_to_float(static_cast<uint16_t>(dbits));
    o.c[0] = d * static_cast<float>(static_cast<int8_t>(sc2 & 255u));
    o.c[1] = d * static_cast<float>(static_cast<int8_t>(sc2 >> 8));
    o.b[0] = o.b[1] = 0.0f;
    const int quarter = s % 4;
    const int lshift = 4 * (quarter / 2), hshift = 2 * quarter;
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const uint32_t low = (lw[m] >> lshift) & 0x0f0f0f0fu;
      const uint32_t high = (hw[m] >> hshift) & 0x03030303u;
      o.g[m] = sub_bytes(low | high << 4, 0x20202020u);
    }
  }
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
#ifdef STRATA_DEVICE_PASS
    // Blocks are only 2-byte aligned: the ql and qh words from nine 4-byte aligned loads each, realigned (the
    // ninth word still lies inside the block), instead of sixteen 2-byte loads each.
    {
      const int half = s / 4, quarter = s % 4;
      uint32_t lw[8], hw[8];
      load_words_a2(b + 64 * half + 32 * (quarter % 2), lw);
      load_words_a2(b + 128 + 32 * half, hw);
      from_words(lw, hw, ld16<kAlign>(b + 192 + 2 * s), ld16<kAlign>(b + 208), s, o);
      return;
    }
#endif
    const float d = half_to_float(ld16<kAlign>(b + 208));
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      o.c[k] = d * static_cast<float>(static_cast<int8_t>(ld8(b + 192 + 2 * s + k)));
      o.b[k] = 0.0f;
    }
    const int half = s / 4, quarter = s % 4;
    const uint8_t* ql = b + 64 * half + 32 * (quarter % 2);
    const uint8_t* qh = b + 128 + 32 * half;
    const int lshift = 4 * (quarter / 2), hshift = 2 * quarter;
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const uint32_t low = (ld32<kAlign>(ql + 4 * m) >> lshift) & 0x0f0f0f0fu;
      const uint32_t high = (ld32<kAlign>(qh + 4 * m) >> hshift) & 0x03030303u;
      o.g[m] = sub_bytes(low | high << 4, 0x20202020u);
    }
  }
};

// ---- i-quants ------------------------------------------------------------------------------------------------

__host__ __device__ inline float iq2_scale(float d, uint32_t s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

__host__ __device__ inline uint32_t iq2_signs(uint32_t seven_bits) {
#ifdef STRATA_DEVICE_PASS
  return grids::ksigns_iq2xs[seven_bits & 127u];
#else
  return format::ksigns_iq2xs[seven_bits & 127u];
#endif
}

// Eight grid bytes (a uint64 entry, or two uint32 entries) with the eight sign bits of `signs`, as two words.
__host__ __device__ inline void put8(uint32_t* g, uint32_t lo, uint32_t hi, uint32_t signs) {
  g[0] = apply_signs4(lo, signs);
  g[1] = apply_signs4(hi, signs >> 4);
}

struct DecodeIQ2_XXS {
  static constexpr GgmlType kType = GgmlType::IQ2_XXS;
  static constexpr int kElems = 256, kBytes = 66, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, then per span 8 bytes @2+8s: four grid indices, then a word of four 7-bit sign groups and the scale.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint8_t* q = b + 2 + 8 * s;
    const uint32_t meta = ld32<kAlign>(q + 4);
    o.c[0] = iq2_scale(d, meta >> 28);
    o.b[0] = 0.0f;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint64_t grid = STRATA_GRID(iq2xxs_grid)[ld8(q + l)];
      put8(o.g + 2 * l, static_cast<uint32_t>(grid), static_cast<uint32_t>(grid >> 32), iq2_signs(meta >> (7 * l)));
    }
  }
};

struct DecodeIQ2_XS {
  static constexpr GgmlType kType = GgmlType::IQ2_XS;
  static constexpr int kElems = 256, kBytes = 74, kSub = 16, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, qs (uint16: 9-bit grid index, 7 sign bits) @2, scales[8] @66.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint32_t sc = ld8(b + 66 + s);
    o.c[0] = iq2_scale(d, sc & 15u);
    o.c[1] = iq2_scale(d, sc >> 4);
    o.b[0] = o.b[1] = 0.0f;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t q = ld16<kAlign>(b + 2 + 2 * (4 * s + l));
      const uint64_t grid = STRATA_GRID(iq2xs_grid)[q & 511u];
      put8(o.g + 2 * l, static_cast<uint32_t>(grid), static_cast<uint32_t>(grid >> 32), iq2_signs(q >> 9));
    }
  }
};

struct DecodeIQ2_S {
  static constexpr GgmlType kType = GgmlType::IQ2_S;
  static constexpr int kElems = 256, kBytes = 82, kSub = 16, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, qs[32] grid index low bytes @2, signs[32] @34, qh[8] @66, scales[8] @74.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint32_t sc = ld8(b + 74 + s);
    o.c[0] = iq2_scale(d, sc & 15u);
    o.c[1] = iq2_scale(d, sc >> 4);
    o.b[0] = o.b[1] = 0.0f;
    const uint32_t qh = ld8(b + 66 + s);
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t index = ld8(b + 2 + 4 * s + l) | ((qh << (8 - 2 * l)) & 0x300u);
      const uint64_t grid = STRATA_GRID(iq2s_grid)[index];
      put8(o.g + 2 * l, static_cast<uint32_t>(grid), static_cast<uint32_t>(grid >> 32), ld8(b + 34 + 4 * s + l));
    }
  }
};

struct DecodeIQ3_XXS {
  static constexpr GgmlType kType = GgmlType::IQ3_XXS;
  static constexpr int kElems = 256, kBytes = 98, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, grid indices[64] @2, per span a word of four 7-bit sign groups and the scale @66+4s.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint32_t meta = ld32<kAlign>(b + 66 + 4 * s);
    o.c[0] = d * (0.5f + static_cast<float>(meta >> 28)) * 0.5f;
    o.b[0] = 0.0f;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t g1 = STRATA_GRID(iq3xxs_grid)[ld8(b + 2 + 8 * s + 2 * l)];
      const uint32_t g2 = STRATA_GRID(iq3xxs_grid)[ld8(b + 2 + 8 * s + 2 * l + 1)];
      put8(o.g + 2 * l, g1, g2, iq2_signs(meta >> (7 * l)));
    }
  }
};

struct DecodeIQ3_S {
  static constexpr GgmlType kType = GgmlType::IQ3_S;
  static constexpr int kElems = 256, kBytes = 110, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint32_t sc = (ld8(b + 106 + s / 2) >> (4 * (s % 2))) & 15u;
    o.c[0] = d * static_cast<float>(1 + 2 * static_cast<int>(sc));
    o.b[0] = 0.0f;
    const uint32_t qh = ld8(b + 66 + s);
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const uint32_t g1 = STRATA_GRID(iq3s_grid)[ld8(b + 2 + 8 * s + 2 * l) | ((qh << (8 - 2 * l)) & 256u)];
      const uint32_t g2 = STRATA_GRID(iq3s_grid)[ld8(b + 2 + 8 * s + 2 * l + 1) | ((qh << (7 - 2 * l)) & 256u)];
      put8(o.g + 2 * l, g1, g2, ld8(b + 74 + 4 * s + l));
    }
  }
};

// IQ1: grid bytes are int8 -1/0/+1; g = 8 * grid + 1, or 8 * grid - 1 when the delta is negative.
__host__ __device__ inline void put8_iq1(uint32_t* g, uint64_t grid, bool negative) {
  const uint32_t bias = negative ? 0x09090909u : 0x07070707u;  // 8*(v+1) - 9 = 8v - 1, 8*(v+1) - 7 = 8v + 1
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t v1 = sub_bytes(static_cast<uint32_t>(grid >> (32 * h)), 0xffffffffu);  // v + 1: 0, 1 or 2
    g[h] = sub_bytes(v1 << 3, bias);
  }
}

__host__ __device__ inline uint64_t iq1s_entry(uint32_t index) { return STRATA_GRID(iq1s_grid)[index]; }

struct DecodeIQ1_S {
  static constexpr GgmlType kType = GgmlType::IQ1_S;
  static constexpr int kElems = 256, kBytes = 50, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // d @0, qs[32] @2, qh (uint16)[8] @34.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const float d = half_to_float(ld16<kAlign>(b));
    const uint32_t qh = ld16<kAlign>(b + 34 + 2 * s);
    const float dl = d * static_cast<float>(2 * static_cast<int>((qh >> 12) & 7u) + 1);
    o.c[0] = dl * 0.125f;
    o.b[0] = 0.0f;
    const bool negative = (qh & 0x8000u) != 0;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      put8_iq1(o.g + 2 * l, iq1s_entry(ld8(b + 2 + 4 * s + l) | ((qh >> (3 * l)) & 7u) << 8), negative);
    }
  }
};

struct DecodeIQ1_M {
  static constexpr GgmlType kType = GgmlType::IQ1_M;
  static constexpr int kElems = 256, kBytes = 56, kSub = 16, kAlign = 4;
  static constexpr bool kOffset = false;
  // qs[32] @0, qh[16] @32, scales (uint16)[4] @48 whose top nibbles hold d.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const uint32_t s01 = ld32<kAlign>(b + 48), s23 = ld32<kAlign>(b + 52);
    const uint32_t d_bits = (s01 >> 12 & 0x000fu) | (s01 >> 24 & 0x00f0u) | (s23 >> 4 & 0x0f00u) | (s23 >> 16 & 0xf000u);
    const float d = half_to_float(static_cast<uint16_t>(d_bits));
    const uint32_t sc = ld16<kAlign>(b + 48 + 2 * (s / 2));
    const int shift = 6 * (s % 2);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const float dl = d * static_cast<float>(2 * static_cast<int>((sc >> (shift + 3 * k)) & 7u) + 1);
      o.c[k] = dl * 0.125f;
      o.b[k] = 0.0f;
    }
    const uint32_t qh0 = ld8(b + 32 + 2 * s), qh1 = ld8(b + 33 + 2 * s);
    const uint32_t index[4] = {ld8(b + 4 * s) | ((qh0 << 8) & 0x700u), ld8(b + 4 * s + 1) | ((qh0 << 4) & 0x700u),
                               ld8(b + 4 * s + 2) | ((qh1 << 8) & 0x700u), ld8(b + 4 * s + 3) | ((qh1 << 4) & 0x700u)};
    const bool negative[4] = {(qh0 & 0x08u) != 0, (qh0 & 0x80u) != 0, (qh1 & 0x08u) != 0, (qh1 & 0x80u) != 0};
#pragma unroll
    for (int l = 0; l < 4; ++l) put8_iq1(o.g + 2 * l, iq1s_entry(index[l]), negative[l]);
  }
};

struct DecodeIQ4_NL {
  static constexpr GgmlType kType = GgmlType::IQ4_NL;
  static constexpr int kElems = 32, kBytes = 18, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b));
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 4; ++m) nibble_values(ld32<kAlign>(b + 2 + 4 * m), iq4nl_value, o.g[m], o.g[m + 4]);
  }
};

struct DecodeIQ4_XS {
  static constexpr GgmlType kType = GgmlType::IQ4_XS;
  static constexpr int kElems = 256, kBytes = 136, kSub = 32, kAlign = 4;
  static constexpr bool kOffset = false;
  // d @0, scales_h (uint16) @2, scales_l[4] @4, qs[128] @8; span s reads qs[16s..16s+15].
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    const uint32_t head = ld32<kAlign>(b);
    const float d = half_to_float(static_cast<uint16_t>(head));
    const uint32_t ls = ((ld8(b + 4 + s / 2) >> (4 * (s % 2))) & 15u) | ((head >> (16 + 2 * s)) & 3u) << 4;
    o.c[0] = d * static_cast<float>(static_cast<int>(ls) - 32);
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 4; ++m) nibble_values(ld32<kAlign>(b + 8 + 16 * s + 4 * m), iq4nl_value, o.g[m], o.g[m + 4]);
  }
};

// ---- MXFP4 and the ternary formats --------------------------------------------------------------------------

struct DecodeMXFP4 {
  static constexpr GgmlType kType = GgmlType::MXFP4;
  static constexpr int kElems = 32, kBytes = 17, kSub = 32, kAlign = 1;
  static constexpr bool kOffset = false;
  __host__ __device__ static void decode(const uint8_t* b, int, Span& o) {
    o.c[0] = e8m0_half_to_float(static_cast<uint8_t>(ld8(b)));
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 4; ++m) nibble_values(ld32<kAlign>(b + 1 + 4 * m), mxfp4_value, o.g[m], o.g[m + 4]);
  }
};

// Digit n (0..4) of a TQ1_0 byte minus one, as in canonical_other.cpp.
__host__ __device__ inline uint32_t tq1_value(uint32_t packed, int n) {
  const uint32_t pow3 = n == 0 ? 1u : n == 1 ? 3u : n == 2 ? 9u : n == 3 ? 27u : 81u;  // no indexed local array
  const uint32_t q = (packed * pow3) & 0xffu;
  return static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int>((q * 3) >> 8) - 1));
}

struct DecodeTQ1_0 {
  static constexpr GgmlType kType = GgmlType::TQ1_0;
  static constexpr int kElems = 256, kBytes = 54, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // qs[48] @0, qh[4] @48, d @52. Values 0..159: digit v/32 of qs[v%32]; 160..239: digit (v-160)/16 of
  // qs[32 + v%16]; 240..255: digit (v-240)/4 of qh[v%4].
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b + 52));
    o.b[0] = 0.0f;
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      uint32_t r = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int v = 32 * s + 4 * m + i;
        uint32_t byte;
        int n;
        if (v < 160) {
          byte = ld8(b + v % 32);
          n = v / 32;
        } else if (v < 240) {
          byte = ld8(b + 32 + (v - 160) % 16);
          n = (v - 160) / 16;
        } else {
          byte = ld8(b + 48 + (v - 240) % 4);
          n = (v - 240) / 4;
        }
        r |= tq1_value(byte, n) << (8 * i);
      }
      o.g[m] = r;
    }
  }
};

struct DecodeTQ2_0 {
  static constexpr GgmlType kType = GgmlType::TQ2_0;
  static constexpr int kElems = 256, kBytes = 66, kSub = 32, kAlign = 2;
  static constexpr bool kOffset = false;
  // qs[64] @0, d @64. Span s: 2-bit field at shift 2*(s%4) of qs[32*(s/4) + i], minus one.
  __host__ __device__ static void decode(const uint8_t* b, int s, Span& o) {
    o.c[0] = half_to_float(ld16<kAlign>(b + 64));
    o.b[0] = 0.0f;
    const uint8_t* q = b + 32 * (s / 4);
    const int shift = 2 * (s % 4);
#pragma unroll
    for (int m = 0; m < 8; ++m) o.g[m] = sub_bytes((ld32<kAlign>(q + 4 * m) >> shift) & 0x03030303u, 0x01010101u);
  }
};

// Calls f(Decoder{}) with the decoder of `type`; returns false when there is none (f is not called).
template <class F>
bool with_decoder(uint32_t type, F&& f) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q4_0: f(DecodeQ4_0{}); return true;
    case GgmlType::Q4_1: f(DecodeQ4_1{}); return true;
    case GgmlType::Q5_0: f(DecodeQ5_0{}); return true;
    case GgmlType::Q5_1: f(DecodeQ5_1{}); return true;
    case GgmlType::Q8_0: f(DecodeQ8_0{}); return true;
    case GgmlType::Q2_K: f(DecodeQ2_K{}); return true;
    case GgmlType::Q3_K: f(DecodeQ3_K{}); return true;
    case GgmlType::Q4_K: f(DecodeQ4_K{}); return true;
    case GgmlType::Q5_K: f(DecodeQ5_K{}); return true;
    case GgmlType::Q6_K: f(DecodeQ6_K{}); return true;
    case GgmlType::IQ2_XXS: f(DecodeIQ2_XXS{}); return true;
    case GgmlType::IQ2_XS: f(DecodeIQ2_XS{}); return true;
    case GgmlType::IQ2_S: f(DecodeIQ2_S{}); return true;
    case GgmlType::IQ3_XXS: f(DecodeIQ3_XXS{}); return true;
    case GgmlType::IQ3_S: f(DecodeIQ3_S{}); return true;
    case GgmlType::IQ1_S: f(DecodeIQ1_S{}); return true;
    case GgmlType::IQ1_M: f(DecodeIQ1_M{}); return true;
    case GgmlType::IQ4_NL: f(DecodeIQ4_NL{}); return true;
    case GgmlType::IQ4_XS: f(DecodeIQ4_XS{}); return true;
    case GgmlType::MXFP4: f(DecodeMXFP4{}); return true;
    case GgmlType::TQ1_0: f(DecodeTQ1_0{}); return true;
    case GgmlType::TQ2_0: f(DecodeTQ2_0{}); return true;
    default: return false;
  }
}

// Decoder types in a set: OneOf<Q4_0, Q8_0>::holds<Dec> is whether Dec decodes one of them.
template <GgmlType... kTypes>
struct OneOf {
  template <class Dec>
  static constexpr bool holds = ((Dec::kType == kTypes) || ...);
};

// with_decoder restricted to the types of Set (f is instantiated for those only, so a path's kernels exist only
// for the types it was built for); false for any other type.
template <class Set, class F>
bool with_decoder_in(uint32_t type, F&& f) {
  bool taken = false;
  with_decoder(type, [&](auto dec) {
    if constexpr (Set::template holds<decltype(dec)>) {
      f(dec);
      taken = true;
    }
  });
  return taken;
}

// The alignment (bytes) a row of `type` needs for its decoder's loads; 0 when the type has no decoder.
inline int decoder_alignment(uint32_t type) {
  int align = 0;
  with_decoder(type, [&](auto dec) { align = decltype(dec)::kAlign; });
  return align;
}

// Value i (0..31) of a decoded span as dequantize_row computes it: c_k * g_i, plus b_k for types with an offset
// (adding a zero offset would turn a -0.0 product into +0.0).
template <class Dec>
__host__ __device__ inline float span_value(const Span& sp, int i) {
  const int k = Dec::kSub == 32 ? 0 : i / 16;
  const float v = sp.c[k] * static_cast<float>(static_cast<int8_t>(sp.g[i / 4] >> (8 * (i % 4))));
  if constexpr (Dec::kOffset) {
    return v + sp.b[k];
  } else {
    return v;
  }
}

// Decodes span j (0-based over the whole row) of a row.
template <class Dec>
__host__ __device__ inline void decode_row_span(const uint8_t* row, int j, Span& o) {
  constexpr int kSpans = Dec::kElems / 32;
  Dec::decode(row + (j / kSpans) * Dec::kBytes, j % kSpans, o);
}

}  // namespace strata::gpu
