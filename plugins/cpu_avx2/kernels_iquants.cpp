// Kernels of the i-quants (256-value super-blocks): grid magnitudes with sign bits (IQ2_*, IQ3_*), the ternary
// grid with a shift (IQ1_S/IQ1_M: g = 8 * grid +- 1, c = dl / 8), and the non-linear table of IQ4_XS. Values are
// built as signed int8 g per span; the float scales are formed with the dequantizer's own operations.
#include "quant_matvec.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/tables.hpp"

namespace strata::cpu {
namespace {

using namespace format;

// IQ2_XXS/IQ2_XS/IQ2_S's scale of a 4-bit sub-block scale s, as the dequantizer forms it.
inline float iq2_scale(float d, int s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

// Four 8-value grid entries with their sign masks (0xff bytes negate) as one span of int8 values.
STRATA_INLINE_AVX2 __m256i signed_grid(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3, __m256i negate) {
  const __m256i grid = _mm256_setr_epi64x(static_cast<long long>(g0), static_cast<long long>(g1),
                                          static_cast<long long>(g2), static_cast<long long>(g3));
  return negate_where(grid, negate);
}

STRATA_INLINE_AVX2 __m256i ksign_masks(uint32_t meta) {
  return _mm256_setr_epi64x(static_cast<long long>(ksigns64[meta & 127]),
                            static_cast<long long>(ksigns64[(meta >> 7) & 127]),
                            static_cast<long long>(ksigns64[(meta >> 14) & 127]),
                            static_cast<long long>(ksigns64[(meta >> 21) & 127]));
}

// Two 4-value grid entries of 32 bits per 8 values.
STRATA_INLINE_AVX2 __m256i grid32x8(const uint32_t (&g)[8]) { return load256(g); }

struct IQ2_XXS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_xxs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    float c[8];
    for (int ib = 0; ib < 8; ++ib) {
      // Per span, 8 bytes: four grid indices, then 4 x 7 sign bits and the 4-bit scale on top.
      const unsigned char* q = p + 2 + 8 * ib;
      const uint32_t meta = load_scalar<uint32_t>(q + 4);
      g.w[ib] = signed_grid(iq2xxs_grid[q[0]], iq2xxs_grid[q[1]], iq2xxs_grid[q[2]], iq2xxs_grid[q[3]],
                            ksign_masks(meta));
      c[ib] = iq2_scale(d, static_cast<int>(meta >> 28));
    }
    g.c0 = _mm256_loadu_ps(c);
  }
};

struct IQ2_XS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_xs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    float c0[8], c1[8];
    for (int ib = 0; ib < 8; ++ib) {
      uint16_t q[4];  // 9-bit grid index, 7-bit sign index
      std::memcpy(q, p + 2 + 8 * ib, sizeof q);
      const __m256i neg = _mm256_setr_epi64x(
          static_cast<long long>(ksigns64[q[0] >> 9]), static_cast<long long>(ksigns64[q[1] >> 9]),
          static_cast<long long>(ksigns64[q[2] >> 9]), static_cast<long long>(ksigns64[q[3] >> 9]));
      g.w[ib] = signed_grid(iq2xs_grid[q[0] & 511], iq2xs_grid[q[1] & 511], iq2xs_grid[q[2] & 511],
                            iq2xs_grid[q[3] & 511], neg);
      const uint8_t sc = p[66 + ib];
      c0[ib] = iq2_scale(d, sc & 0x0f);
      c1[ib] = iq2_scale(d, sc >> 4);
    }
    g.c0 = _mm256_loadu_ps(c0);
    g.c1 = _mm256_loadu_ps(c1);
  }
};

struct IQ2_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    const unsigned char* qs = p + 2;       // 32 low index bytes, then 32 sign bytes
    const unsigned char* qh = p + 66;      // two more index bits per 8 values
    const unsigned char* scales = p + 74;
    float c0[8], c1[8];
    for (int ib = 0; ib < 8; ++ib) {
      uint64_t grid[4];
      for (int l = 0; l < 4; ++l) grid[l] = iq2s_grid[qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300)];
      g.w[ib] = signed_grid(grid[0], grid[1], grid[2], grid[3],
                            bits_to_bytes(load_scalar<uint32_t>(qs + 32 + 4 * ib)));
      c0[ib] = iq2_scale(d, scales[ib] & 0x0f);
      c1[ib] = iq2_scale(d, scales[ib] >> 4);
    }
    g.c0 = _mm256_loadu_ps(c0);
    g.c1 = _mm256_loadu_ps(c1);
  }
};

struct IQ3_XXS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq3_xxs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    const unsigned char* idx = p + 2;  // 64 grid indices of 4 values each, then 8 words of signs and scale
    float c[8];
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t meta = load_scalar<uint32_t>(p + 2 + 64 + 4 * ib);
      uint32_t grid[8];
      for (int k = 0; k < 8; ++k) grid[k] = iq3xxs_grid[idx[8 * ib + k]];
      g.w[ib] = negate_where(grid32x8(grid), ksign_masks(meta));
      c[ib] = d * (0.5f + static_cast<float>(meta >> 28)) * 0.5f;
    }
    g.c0 = _mm256_loadu_ps(c);
  }
};

struct IQ3_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq3_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    const unsigned char* qs = p + 2;
    const unsigned char* qh = p + 66;
    const unsigned char* signs = p + 74;
    const unsigned char* scales = p + 106;
    float c[8];
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t grid[8];
      for (int l = 0; l < 4; ++l) {
        grid[2 * l] = iq3s_grid[qs[8 * ib + 2 * l] | ((qh[ib] << (8 - 2 * l)) & 256)];
        grid[2 * l + 1] = iq3s_grid[qs[8 * ib + 2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)];
      }
      g.w[ib] = negate_where(grid32x8(grid), bits_to_bytes(load_scalar<uint32_t>(signs + 4 * ib)));
      const int s = (scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
      c[ib] = d * static_cast<float>(1 + 2 * s);
    }
    g.c0 = _mm256_loadu_ps(c);
  }
};

// 8 * grid (grid bytes are -1, 0, +1) plus a +-1 shift per 8 values: the IQ1 integer g.
STRATA_INLINE_AVX2 __m256i iq1_values(const uint64_t (&grid)[4], __m256i shift) {
  const __m256i v = _mm256_setr_epi64x(static_cast<long long>(grid[0]), static_cast<long long>(grid[1]),
                                       static_cast<long long>(grid[2]), static_cast<long long>(grid[3]));
  const __m256i times8 = _mm256_and_si256(_mm256_slli_epi16(v, 3), _mm256_set1_epi8(static_cast<char>(0xf8)));
  return _mm256_add_epi8(times8, shift);
}

struct IQ1_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq1_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    const unsigned char* qs = p + 2;
    float c[8];
    for (int ib = 0; ib < 8; ++ib) {
      // qh: 3 index bits per 8 values (bits 0-11), a 3-bit scale (12-14), the shift's sign (15).
      const uint16_t qh = load_scalar<uint16_t>(p + 34 + 2 * ib);
      uint64_t grid[4];
      for (int l = 0; l < 4; ++l) grid[l] = iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
      g.w[ib] = iq1_values(grid, _mm256_set1_epi8((qh & 0x8000) ? -1 : 1));
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      c[ib] = dl * 0.125f;
    }
    g.c0 = _mm256_loadu_ps(c);
  }
};

struct IQ1_M {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq1_m), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* qs = p;
    const unsigned char* qh = p + 32;
    uint16_t sc[4];
    std::memcpy(sc, p + 48, sizeof sc);
    // The f16 super-block scale is spread over the top nibbles of the four scale words.
    const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                              (sc[3] & 0xf000));
    const float d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(d_bits)));
    float c0[8], c1[8];
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t h0 = qh[2 * ib], h1 = qh[2 * ib + 1];
      const uint64_t grid[4] = {iq1s_grid[qs[4 * ib + 0] | ((h0 << 8) & 0x700)],
                                iq1s_grid[qs[4 * ib + 1] | ((h0 << 4) & 0x700)],
                                iq1s_grid[qs[4 * ib + 2] | ((h1 << 8) & 0x700)],
                                iq1s_grid[qs[4 * ib + 3] | ((h1 << 4) & 0x700)]};
      const auto shift_of = [](bool negative) { return negative ? static_cast<int64_t>(0xffffffffffffffffull) : 0x0101010101010101; };
      const __m256i shift = _mm256_setr_epi64x(shift_of(h0 & 0x08), shift_of(h0 & 0x80), shift_of(h1 & 0x08),
                                               shift_of(h1 & 0x80));
      g.w[ib] = iq1_values(grid, shift);
      const int s = 6 * (ib % 2);
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> s) & 7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (s + 3)) & 7) + 1);
      c0[ib] = dl1 * 0.125f;
      c1[ib] = dl2 * 0.125f;
    }
    g.c0 = _mm256_loadu_ps(c0);
    g.c1 = _mm256_loadu_ps(c1);
  }
};

struct IQ4_XS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq4_xs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const float d = f16_at(p);
    const uint16_t scales_h = load_scalar<uint16_t>(p + 2);
    const unsigned char* scales_l = p + 4;
    const __m256i table = _mm256_broadcastsi128_si256(load128(kvalues_iq4nl));
    float c[8];
    for (int ib = 0; ib < 8; ++ib) {
      g.w[ib] = _mm256_shuffle_epi8(table, nibbles_32(p + 8 + 16 * ib));
      const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((scales_h >> (2 * ib)) & 3) << 4);
      c[ib] = d * static_cast<float>(ls - 32);
    }
    g.c0 = _mm256_loadu_ps(c);
  }
};

}  // namespace

void add_iquant_kernels(KernelTable& avx2, KernelTable& avx512) {
  add_quant_kernel<IQ2_XXS>(avx2, avx512, GgmlType::IQ2_XXS);
  add_quant_kernel<IQ2_XS>(avx2, avx512, GgmlType::IQ2_XS);
  add_quant_kernel<IQ2_S>(avx2, avx512, GgmlType::IQ2_S);
  add_quant_kernel<IQ3_XXS>(avx2, avx512, GgmlType::IQ3_XXS);
  add_quant_kernel<IQ3_S>(avx2, avx512, GgmlType::IQ3_S);
  add_quant_kernel<IQ1_S>(avx2, avx512, GgmlType::IQ1_S);
  add_quant_kernel<IQ1_M>(avx2, avx512, GgmlType::IQ1_M);
  add_quant_kernel<IQ4_XS>(avx2, avx512, GgmlType::IQ4_XS);
}

}  // namespace strata::cpu
