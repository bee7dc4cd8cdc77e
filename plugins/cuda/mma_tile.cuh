// Many-token products of quantized weights (MUL_MAT and expert matrices with more than a few tokens) as tiles:
// a block computes kTileRows weight rows x kTileCols activation columns with int8 tensor-core MMAs for the exact
// integer sums S_k, and the float steps of docs/CANONICAL_ARITHMETIC.md section 2 per (row, column, span) in the
// canonical order. The bits are those of the warp-per-row kernels (matvec.cuh): only where the integers come from
// differs.
//
// The block's eight warps are the eight accumulators: warp r takes the spans j = r, r + 8, ... in ascending order,
// so its accumulator of a (row, column) is exactly A_r of the canonical dot; the fixed tree
// ((A0+A1)+(A2+A3))+((A4+A5)+(A6+A7)) then runs across warps through shared memory. Spans come in chunks of eight
// (one per warp): the block decodes the chunk's weight spans once into shared records (g words, c_k, b_k) and
// loads the columns' Q8_1 blocks into records (q words, da, the sums Q_k), and every warp reads its span's records
// as MMA fragments.
//
// The arithmetic per lane (records, fragments, the span's float steps) is __host__ __device__ so that
// tests/cuda_host emulates a block against format::canonical_dot; only the MMA itself is device code.
#pragma once

#include <cstdint>
#include <cstring>

#include "canonical_math.cuh"
#include "matvec.cuh"
#include "quant_decode.cuh"

namespace strata::gpu {

constexpr int kTileWarps = kAccumulators;   // warp r = accumulator r
constexpr int kTileM = 4;                   // 16-row MMA tiles per block
constexpr int kTileN = 4;                   // 8-column MMA tiles per block
constexpr int kTileRows = 16 * kTileM;
constexpr int kTileCols = 8 * kTileN;
constexpr int kTileThreads = 32 * kTileWarps;  // the MMA fragments are defined for 32-lane warps
constexpr int kRecordWords = 12;            // 8 value words + 4 scalars; 12 keeps the fragment reads conflict-free

// Shared memory holds a chunk's records span by span ([span][row or column][word]). A span's records take
// kRecordWords words each plus 4 words of padding: the block's threads make the records with the span as the fast
// index (eight neighbouring threads decode one row's eight spans from the same bytes), and store each record in
// 16-byte pieces, which the hardware serves eight threads at a time. Without the padding those eight records lie a
// multiple of 128 bytes apart and every piece of them falls on the same four banks (eight-way conflicts: some
// 2,300 store cycles a chunk against 290); with it the eight start 16 bytes apart and fill all 32 banks. A warp's
// fragment reads stay within one span, where the padding only shifts every bank by the same amount.
constexpr int kWeightSpanWords = kTileRows * kRecordWords + 4;
constexpr int kActSpanWords = kTileCols * kRecordWords + 4;
static_assert(kWeightSpanWords % 4 == 0 && kActSpanWords % 4 == 0, "records stay 16-byte aligned");

__host__ __device__ inline uint32_t float_bits(float f) {
#ifdef STRATA_DEVICE_PASS
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// ---- records ---------------------------------------------------------------------------------------------------

// A record's words stored as three 16-byte pieces (`rec` is 16-byte aligned: the layout above keeps it so).
__host__ __device__ inline void store_record(const uint32_t (&v)[kRecordWords], uint32_t* rec) {
#ifdef STRATA_DEVICE_PASS
  auto* out = reinterpret_cast<uint4*>(rec);
#pragma unroll
  for (int k = 0; k < kRecordWords / 4; ++k) out[k] = make_uint4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
#else
  std::memcpy(rec, v, sizeof v);
#endif
}

// Weight record of (row, span j): words 0..7 the span's g, 8..9 c_0 c_1, 10..11 b_0 b_1 (float bits).
template <class Dec>
__host__ __device__ inline void make_weight_record(const uint8_t* row, int j, uint32_t* rec) {
  Span sp;
  decode_row_span<Dec>(row, j, sp);
  uint32_t v[kRecordWords];
#pragma unroll
  for (int m = 0; m < 8; ++m) v[m] = sp.g[m];
  v[8] = float_bits(sp.c[0]);
  v[9] = float_bits(Dec::kSub == 16 ? sp.c[1] : 0.0f);
  v[10] = float_bits(Dec::kOffset ? sp.b[0] : 0.0f);
  v[11] = float_bits(Dec::kOffset && Dec::kSub == 16 ? sp.b[1] : 0.0f);
  store_record(v, rec);
}

// Activation record of (column, span j) from the column's Q8_1 row: words 0..7 the values, 8 da, 9..10 the sums
// Q_k of the sub-blocks (one sub-block of 32 or two of 16, as the weight type cuts the span) as floats.
template <class Dec>
__host__ __device__ inline void make_act_record(const unsigned char* act_row, int j, uint32_t* rec) {
  uint32_t q[8];
  float da;
  load_q8_1(act_row, j, q, da);
  uint32_t v[kRecordWords];
#pragma unroll
  for (int m = 0; m < 8; ++m) v[m] = q[m];
  v[8] = float_bits(da);
  int q0 = 0, q1 = 0;
  if constexpr (Dec::kOffset) {
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      q0 = dot4(0x01010101u, q[m], q0);
      q1 = dot4(0x01010101u, q[m + 4], q1);
    }
    if constexpr (Dec::kSub == 32) {
      q0 += q1;
      q1 = 0;
    }
  }
  v[9] = float_bits(static_cast<float>(q0));
  v[10] = float_bits(static_cast<float>(q1));
  v[11] = 0;
  store_record(v, rec);
}

// ---- fragments (PTX mma.m16n8k32 / m16n8k16 with s8 inputs; lane = 4 * group + tig) --------------------------

// A (16 rows x 32 values): a[0] row `group` values 4tig..4tig+3, a[1] row group + 8 the same values, a[2] and a[3]
// values 16 + 4tig.. of those rows. With the span's g words (word m = values 4m..4m+3) that is words tig and
// tig + 4. For k16 the first sub-block is (a[0], a[1]), the second (a[2], a[3]).
__host__ __device__ inline void load_frag_a(const uint32_t* recs, int row0, int lane, uint32_t (&a)[4]) {
  const int group = lane / 4, tig = lane % 4;
  const uint32_t* r0 = recs + (row0 + group) * kRecordWords;
  const uint32_t* r1 = recs + (row0 + group + 8) * kRecordWords;
  a[0] = r0[tig];
  a[1] = r1[tig];
  a[2] = r0[tig + 4];
  a[3] = r1[tig + 4];
}

// B (32 values x 8 columns): b[0] column `group` values 4tig..4tig+3, b[1] values 16 + 4tig... For k16 the first
// sub-block is b[0], the second b[1].
__host__ __device__ inline void load_frag_b(const uint32_t* recs, int col0, int lane, uint32_t (&b)[2]) {
  const int group = lane / 4, tig = lane % 4;
  const uint32_t* r = recs + (col0 + group) * kRecordWords;
  b[0] = r[tig];
  b[1] = r[tig + 4];
}

// Element i (0..3) of the C fragment: row group (+8 for i >= 2), column 2tig + (i & 1).
__host__ __device__ inline int frag_c_row(int lane, int i) { return lane / 4 + (i >= 2 ? 8 : 0); }
__host__ __device__ inline int frag_c_col(int lane, int i) { return 2 * (lane % 4) + (i & 1); }

// ---- the span's float steps --------------------------------------------------------------------------------------

// The float scalars of a weight record (c_k, b_k) and of an activation record (da, Q_k).
struct RowScales {
  float c0, c1, b0, b1;
  float nk0;  // -(c0 * 1.5 * 2^23), for SumForm::kFold
};
struct ColScales {
  float da, q0, q1;
};
// A record's scalars, words 8..11, in one 16-byte load (one instruction where four would be).
__host__ __device__ inline uint4 record_scalars(const uint32_t* rec) {
#ifdef STRATA_DEVICE_PASS
  return *reinterpret_cast<const uint4*>(rec + 8);
#else
  return {rec[8], rec[9], rec[10], rec[11]};
#endif
}
__host__ __device__ inline RowScales row_scales(const uint32_t* rec) {
  const uint4 v = record_scalars(rec);
  const float c0 = float_from_bits(v.x);
  return {c0, float_from_bits(v.y), float_from_bits(v.z), float_from_bits(v.w), -(c0 * 12582912.0f)};
}
__host__ __device__ inline ColScales col_scales(const uint32_t* rec) {
  const uint4 v = record_scalars(rec);
  return {float_from_bits(v.x), float_from_bits(v.y), float_from_bits(v.z)};
}

// How a kernel form turns its MMAs' int32 sums into floats, all with the same bits:
// - kConvert: the sums start at 0 and are converted (I2F: 16 a clock a multiprocessor, a quarter of the float
//   adds' rate; with four float operations an output a span it alone would bound a kernel near 500 multiply-adds
//   a clock a multiprocessor);
// - kBias: the sums start at kSumBias, the bits of K = 1.5 * 2^23. For |S| < 2^22 (a span's sums stay below 2^20)
//   the biased sum is the bits of the float K + S, exact, and one exact subtraction gives float(S): a float add
//   instead of the conversion;
// - kFold: biased, and the first product takes the unbiasing too: c0 * float(S) = fma(c0, K + S, -(c0 * K)), one
//   rounding of the exact c0 * S, when c0 * K is exact. It is for every type whose c0 is an f16 times a small
//   integer or a short fraction (at most 19 significant bits, so 3 * c0 fits a float's 24, and c0 * K stays in
//   range): every tiled type but MXFP4, whose power-of-two scale reaches 2^127. One float operation fewer an output
//   a span. A zero product comes out +0 where c0 * 0 is -0 for negative c0: partials only reach sums that start at
//   +0, where the sign of a zero addend never shows. The one difference: an infinite f16 scale (a broken file)
//   gives NaN where the product gives an infinity.
// The kernel asks for kFold (tiled_product.cu); kSumForm then keeps Q4_1 and Q5_1 on the conversion (the bias's
// register spills their kernels at 128 on sm_90), MXFP4 off the fold, and the types with 16-value sub-blocks
// biased at least.
enum class SumForm { kConvert, kBias, kFold };
template <class Dec, SumForm kAsked>
constexpr SumForm kSumForm =
    Dec::kSub == 32 && (Dec::kType == GgmlType::Q4_1 || Dec::kType == GgmlType::Q5_1) ? SumForm::kConvert
    : kAsked == SumForm::kFold && Dec::kType == GgmlType::MXFP4                        ? SumForm::kBias
    : Dec::kSub == 16 && kAsked == SumForm::kConvert                                  ? SumForm::kBias
                                                                                      : kAsked;
constexpr int kSumBias = 0x4B400000;
__host__ __device__ inline float unbias_sum(int biased) {
  return float_from_bits(static_cast<uint32_t>(biased)) - 12582912.0f;
}
// kFold's first product: c0 * float(S) from the biased sum and nk0 = -(c0 * K).
__host__ __device__ inline float folded_product(float c0, int biased, float nk0) {
  return fma_c(c0, float_from_bits(static_cast<uint32_t>(biased)), nk0);
}
template <class Dec, SumForm kAsked>
constexpr int kMmaSumStart = kSumForm<Dec, kAsked> == SumForm::kConvert ? 0 : kSumBias;
template <class Dec, SumForm kAsked>
__host__ __device__ inline float sum_to_float(int s) {
  if constexpr (kSumForm<Dec, kAsked> == SumForm::kConvert) {
    return static_cast<float>(s);
  } else {
    return unbias_sum(s);
  }
}

// Section 2 for one (row, column, span): the sums S_0 (and S_1) from the MMAs (started at kMmaSumStart), then
// span_partial's float steps.
template <class Dec, SumForm kAsked>
__host__ __device__ inline float tile_partial(const RowScales& w, const ColScales& a, int s0, int s1) {
  float t;
  if constexpr (kSumForm<Dec, kAsked> == SumForm::kFold) {
    t = folded_product(w.c0, s0, w.nk0);
  } else {
    t = w.c0 * sum_to_float<Dec, kAsked>(s0);
  }
  if constexpr (Dec::kSub == 16) t = fma_c(w.c1, sum_to_float<Dec, kAsked>(s1), t);
  if constexpr (Dec::kOffset) {
    t = fma_c(w.b0, a.q0, t);
    if constexpr (Dec::kSub == 16) t = fma_c(w.b1, a.q1, t);
  }
  return t * a.da;
}

// The weight types with a tiled kernel: f(Decoder{}) and true, or false. Every decoder's g_i must be the
// dequantized integer exactly and fit int8, the MMAs' inputs: the grid i-quants' signed grid bytes (|g| <= 43 for
// IQ2, 62 for IQ3_XXS, 15 for IQ3_S), IQ1's 8 * grid +- 1 (|g| <= 9) and MXFP4's table values (|g| <= 12) do. The
// ternary TQ1_0 / TQ2_0 would fit too but are not built (they stay on the warp-per-row kernels).
using TiledTypes =
    OneOf<GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
          GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
          GgmlType::MXFP4>;
template <class F>
bool with_tiled_decoder(uint32_t type, F&& f) {
  return with_decoder_in<TiledTypes>(type, f);
}

}  // namespace strata::gpu
