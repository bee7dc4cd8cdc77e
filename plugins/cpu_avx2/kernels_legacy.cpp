// Kernels of the 32-value block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, and the table-mapped IQ4_NL and MXFP4.
// One block is one span, so a group is eight consecutive blocks (fewer at the end of a row).
#include "quant_matvec.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/tables.hpp"

namespace strata::cpu {
namespace {

using namespace format;

// The f16 at byte `offset` of each of the group's blocks (0 for spans that do not exist), converted exactly (F16C's
// vcvtph2ps equals format::fp16_to_fp32, subnormals included). The halves are packed in registers: eight 2-byte
// stores read back by one 16-byte load would stall on store forwarding every group.
template <int kBytes>
STRATA_INLINE_AVX2 __m256 block_f16(const unsigned char* p, int spans, int offset) {
  uint64_t lo = 0, hi = 0;
  for (int s = 0; s < spans; ++s) {
    const uint64_t h = load_scalar<uint16_t>(p + s * kBytes + offset);
    if (s < 4) {
      lo |= h << (16 * s);
    } else {
      hi |= h << (16 * (s - 4));
    }
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
}

// MXFP4's scales, 2^(e - 128) for the E8M0 byte e of each of the group's blocks (format::e8m0_to_fp32_half's bits:
// (e - 1) << 23, or the subnormals 0x00200000 << e for e < 2), 0 for spans that do not exist; in registers, as
// block_f16.
template <int kBytes>
STRATA_INLINE_AVX2 __m256 block_e8m0_half(const unsigned char* p, int spans) {
  uint64_t bytes = 0;
  for (int s = 0; s < spans; ++s) bytes |= static_cast<uint64_t>(p[s * kBytes]) << (8 * s);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, one), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i bits = _mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(e, one));
  return _mm256_castsi256_ps(_mm256_and_si256(bits, lane_mask(spans)));
}

// The fifth bit of each value (Q5_0/Q5_1), as 16 where set.
STRATA_INLINE_AVX2 __m256i fifth_bits(const unsigned char* qh) {
  return _mm256_and_si256(bits_to_bytes(load_scalar<uint32_t>(qh)), _mm256_set1_epi8(16));
}

// A 16-entry int8 table applied to a span's nibbles.
STRATA_INLINE_AVX2 __m256i lookup16(const int8_t (&table)[16], __m256i nibbles) {
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(load128(table)), nibbles);
}

STRATA_INLINE_AVX2 void zero_missing(Group& g, int spans) {
  for (int s = spans; s < 8; ++s) g.w[s] = _mm256_setzero_si256();
}

struct Q4_0 {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_q4_0), kBias = 8;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) g.w[s] = nibbles_32(p + s * kBlockBytes + 2);
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
  }
};

struct Q4_1 {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_q4_1), kBias = 0;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = true;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) g.w[s] = nibbles_32(p + s * kBlockBytes + 4);
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
    g.b0 = block_f16<kBlockBytes>(p, spans, 2);
  }
};

struct Q5_0 {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_q5_0), kBias = 16;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) {
      const unsigned char* b = p + s * kBlockBytes;
      g.w[s] = _mm256_or_si256(nibbles_32(b + 6), fifth_bits(b + 2));
    }
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
  }
};

struct Q5_1 {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_q5_1), kBias = 0;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = true;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) {
      const unsigned char* b = p + s * kBlockBytes;
      g.w[s] = _mm256_or_si256(nibbles_32(b + 8), fifth_bits(b + 4));
    }
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
    g.b0 = block_f16<kBlockBytes>(p, spans, 2);
  }
};

struct Q8_0 {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_q8_0), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) g.w[s] = load256(p + s * kBlockBytes + 2);
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
  }
};

struct IQ4_NL {
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_iq4_nl), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    for (int s = 0; s < spans; ++s) g.w[s] = lookup16(kvalues_iq4nl, nibbles_32(p + s * kBlockBytes + 2));
    zero_missing(g, spans);
    g.c0 = block_f16<kBlockBytes>(p, spans, 0);
  }
};

// The shuffle control that moves byte `first + k` of each 16-byte chunk k into the low byte of dword `slot` of the
// same chunk, every other byte zero (control bytes with the top bit set).
STRATA_AVX512 inline __attribute__((always_inline)) __m512i scale_pick(int slot, int first) {
  const auto d = [=](int k, int i) { return i == slot ? -256 + first + k : -1; };
  return _mm512_setr_epi32(d(0, 0), d(0, 1), d(0, 2), d(0, 3), d(1, 0), d(1, 1), d(1, 2), d(1, 3), d(2, 0), d(2, 1),
                           d(2, 2), d(2, 3), d(3, 0), d(3, 1), d(3, 2), d(3, 3));
}

struct MXFP4 {
  // The values biased by 16 (4..28, unsigned), taken back out with the activations' sums: the products need no
  // sign moves (AVX2) or sign flips (AVX-512).
  static constexpr int kBlockValues = 32, kBlockBytes = sizeof(block_mxfp4), kBias = 16;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = false;
  // kvalues_mxfp4 + kBias, the one table both forms shuffle with.
  STRATA_INLINE_AVX2 static __m128i biased_table() {
    return _mm_add_epi8(load128(kvalues_mxfp4), _mm_set1_epi8(kBias));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int spans, Group& g) {
    const __m256i table = _mm256_broadcastsi128_si256(biased_table());
    for (int s = 0; s < spans; ++s) g.w[s] = _mm256_shuffle_epi8(table, nibbles_32(p + s * kBlockBytes + 1));
    zero_missing(g, spans);
    g.c0 = block_e8m0_half<kBlockBytes>(p, spans);
  }
  // The AVX-512 forms (quant_matvec.hpp; whole groups only: a row's last, partial group takes decode): each
  // register's four 16-byte chunks are loaded as [span 2j, span 2j, span 2j + 1, span 2j + 1] by broadcasts,
  // which take no shuffle port, and the table lookup is the one shuffle a register; the scales of two rows are
  // picked out of four loads by two shuffles a row and one permute, where block_e8m0_half reads each byte alone.
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) { g.c0 = block_e8m0_half<kBlockBytes>(p, 8); }
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    const __m512i table = _mm512_broadcast_i32x4(biased_table());
    for (int j = 0; j < 4; ++j) {
      const unsigned char* qs = p + 2 * j * kBlockBytes + 1;
      const __m512i x = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(load128(qs)), 0xff00,
                                                    load128(qs + kBlockBytes));
      // Chunks 1 and 3 (16-bit lanes 8..15, 24..31) shifted down by 4: the high nibbles, values 16..31.
      const __m512i nibbles = _mm512_and_si512(_mm512_mask_srli_epi16(x, 0xff00ff00u, x, 4), _mm512_set1_epi8(0x0f));
      w[j] = _mm512_shuffle_epi8(table, nibbles);
    }
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void scales_pair(const unsigned char* pa,
                                                                              const unsigned char* pb,
                                                                              avx512::ScalePair& sp) {
    // Block s's E8M0 byte is at 17s: for s < 4 byte s of the 16-byte chunk s of the 64 bytes at p, for s >= 4
    // byte s of chunk s - 4 of the 64 bytes at p + 64. Chunk k gathers [a_k, a_k+4, b_k, b_k+4] as dwords.
    static_assert(kBlockBytes == 17, "the scale bytes' places assume 17-byte blocks");
    const __m512i a0 = _mm512_shuffle_epi8(_mm512_loadu_si512(pa), scale_pick(0, 0));
    const __m512i a1 = _mm512_shuffle_epi8(_mm512_loadu_si512(pa + 64), scale_pick(1, 4));
    const __m512i b0 = _mm512_shuffle_epi8(_mm512_loadu_si512(pb), scale_pick(2, 0));
    const __m512i b1 = _mm512_shuffle_epi8(_mm512_loadu_si512(pb + 64), scale_pick(3, 4));
    const __m512i e = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
        _mm512_or_si512(_mm512_or_si512(a0, a1), _mm512_or_si512(b0, b1)));
    // block_e8m0_half's bits on 16 lanes: (e - 1) << 23, or 0x00200000 << e for e < 2.
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, one), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    sp.c0 = _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(e, one), subnormal, normal));
  }
};

}  // namespace

void add_legacy_kernels(KernelTable& avx2, KernelTable& avx512) {
  add_quant_kernel<Q4_0>(avx2, avx512, GgmlType::Q4_0);
  add_quant_kernel<Q4_1>(avx2, avx512, GgmlType::Q4_1);
  add_quant_kernel<Q5_0>(avx2, avx512, GgmlType::Q5_0);
  add_quant_kernel<Q5_1>(avx2, avx512, GgmlType::Q5_1);
  add_quant_kernel<Q8_0>(avx2, avx512, GgmlType::Q8_0);
  add_quant_kernel<IQ4_NL>(avx2, avx512, GgmlType::IQ4_NL);
  add_quant_kernel<MXFP4>(avx2, avx512, GgmlType::MXFP4);
}

}  // namespace strata::cpu
