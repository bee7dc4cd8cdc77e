// The tiled product's arithmetic (mma_tile.cuh), run on the host: a block emulated warp by warp, with the weight
// and activation records, the MMA fragments and the span's float steps of the kernel, and the MMAs themselves
// emulated from PTX's fragment layout of mma.m16n8k32 / m16n8k16 (s8 inputs, s32 sums). Every (row, column) must
// equal format::canonical_dot bit for bit. Weights: ggml's blocks from tests/data/quant.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mma_tile.cuh"
#include "strata/format/canonical.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"

namespace strata::gpu {
namespace {

using Lanes4 = uint32_t[32][4];
using Lanes2 = uint32_t[32][2];

int8_t byte_of(uint32_t word, int i) { return static_cast<int8_t>(word >> (8 * i)); }

// PTX's layout for 32-lane warps, lane = 4 * group + tig: A(16 x K) row r, value v sits in lane 4 * (r % 8) +
// (v % 16) / 4, register (r >= 8) + 2 * (v >= 16), byte v % 4 (K = 16 uses registers 0 and 1 only); B(K x 8)
// value v, column n in lane 4 * n + (v % 16) / 4, register v >= 16, byte v % 4; C row r, column n in lane
// 4 * (r % 8) + n / 2, element 2 * (r >= 8) + n % 2. The sums start at `start` (the kernel's C input).
void emulate_mma(int k_values, const Lanes4& a, const Lanes2& b, int start, int (&c)[32][4]) {
  for (int r = 0; r < 16; ++r) {
    for (int n = 0; n < 8; ++n) {
      int sum = start;  // the kernel's C input
      for (int v = 0; v < k_values; ++v) {
        const int av = byte_of(a[4 * (r % 8) + (v % 16) / 4][(r >= 8 ? 1 : 0) + (v >= 16 ? 2 : 0)], v % 4);
        const int bv = byte_of(b[4 * n + (v % 16) / 4][v >= 16 ? 1 : 0], v % 4);
        sum += av * bv;
      }
      c[4 * (r % 8) + n / 2][(r >= 8 ? 2 : 0) + n % 2] = sum;
    }
  }
}

// One block of the tiled kernel: rows [0, n_rows) of `w` (clamped to the last row past it, like the kernel) against
// the Q8_1 columns at act + c * act_stride, c < n_cols; out[c][r] for r < n_rows, c < n_cols.
template <class Dec>
std::vector<std::vector<float>> emulate_block(const unsigned char* w, uint64_t w_stride, int n_rows,
                                              const unsigned char* act, uint64_t act_stride, int n_cols, int n_spans,
                                              SumForm form) {
  std::vector<float> acc(static_cast<size_t>(kTileWarps * kTileRows * kTileCols), 0.0f);
  const auto at = [&](int warp, int row, int col) -> float& {
    return acc[static_cast<size_t>((warp * kTileRows + row) * kTileCols + col)];
  };
  std::vector<uint32_t> wrecs(static_cast<size_t>(kTileWarps * kWeightSpanWords));  // the kernel's layout
  std::vector<uint32_t> arecs(static_cast<size_t>(kTileWarps * kActSpanWords));
  const auto weight_row = [&](int r) { return w + static_cast<uint64_t>(r < n_rows ? r : n_rows - 1) * w_stride; };
  const auto act_col = [&](int c) { return act + static_cast<uint64_t>(c < n_cols ? c : n_cols - 1) * act_stride; };
  for (int base = 0; base < n_spans; base += kTileWarps) {
    for (int s = 0; s < kTileWarps && base + s < n_spans; ++s) {
      for (int r = 0; r < kTileRows; ++r) {
        make_weight_record<Dec>(weight_row(r), base + s, wrecs.data() + s * kWeightSpanWords + r * kRecordWords);
      }
      for (int c = 0; c < kTileCols; ++c) {
        make_act_record<Dec>(act_col(c), base + s, arecs.data() + s * kActSpanWords + c * kRecordWords);
      }
    }
    for (int warp = 0; warp < kTileWarps && base + warp < n_spans; ++warp) {
      const uint32_t* wr = wrecs.data() + warp * kWeightSpanWords;
      const uint32_t* ar = arecs.data() + warp * kActSpanWords;
      for (int m = 0; m < kTileM; ++m) {
        for (int n = 0; n < kTileN; ++n) {
          Lanes4 a;
          Lanes2 b;
          for (int lane = 0; lane < 32; ++lane) {
            load_frag_a(wr, 16 * m, lane, a[lane]);
            load_frag_b(ar, 8 * n, lane, b[lane]);
          }
          int s0[32][4], s1[32][4] = {};
          // The MMAs' start as the form asks (kSumBias, or 0 where the sums are converted).
          const int start = form == SumForm::kConvert ? kMmaSumStart<Dec, SumForm::kConvert>
                            : form == SumForm::kBias  ? kMmaSumStart<Dec, SumForm::kBias>
                                                      : kMmaSumStart<Dec, SumForm::kFold>;
          if (Dec::kSub == 32) {
            emulate_mma(32, a, b, start, s0);
          } else {
            Lanes4 a_hi;
            Lanes2 b_hi;
            for (int lane = 0; lane < 32; ++lane) {
              a_hi[lane][0] = a[lane][2];
              a_hi[lane][1] = a[lane][3];
              a_hi[lane][2] = a_hi[lane][3] = 0;
              b_hi[lane][0] = b[lane][1];
              b_hi[lane][1] = 0;
            }
            emulate_mma(16, a, b, start, s0);
            emulate_mma(16, a_hi, b_hi, start, s1);
          }
          for (int lane = 0; lane < 32; ++lane) {
            for (int i = 0; i < 4; ++i) {
              const int row = 16 * m + frag_c_row(lane, i), col = 8 * n + frag_c_col(lane, i);
              const RowScales rs = row_scales(wr + row * kRecordWords);
              const ColScales cs = col_scales(ar + col * kRecordWords);
              const float p = form == SumForm::kConvert ? tile_partial<Dec, SumForm::kConvert>(rs, cs, s0[lane][i], s1[lane][i])
                              : form == SumForm::kBias    ? tile_partial<Dec, SumForm::kBias>(rs, cs, s0[lane][i], s1[lane][i])
                                                          : tile_partial<Dec, SumForm::kFold>(rs, cs, s0[lane][i], s1[lane][i]);
              at(warp, row, col) = at(warp, row, col) + p;
            }
          }
        }
      }
    }
  }
  std::vector<std::vector<float>> out(static_cast<size_t>(n_cols), std::vector<float>(static_cast<size_t>(n_rows)));
  for (int c = 0; c < n_cols; ++c) {
    for (int r = 0; r < n_rows; ++r) {
      const auto A = [&](int w_) { return at(w_, r, c); };
      out[static_cast<size_t>(c)][static_cast<size_t>(r)] = ((A(0) + A(1)) + (A(2) + A(3))) + ((A(4) + A(5)) + (A(6) + A(7)));
    }
  }
  return out;
}

std::vector<unsigned char> ggml_blocks(GgmlType type) {
  std::string name(format::traits(type).name);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/quant/" + name + ".blocks", std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open the blocks of " << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// n_rows rows of n_in values, row r made of ggml's blocks r, r + 1, ... (wrapping), and n_cols random columns; the
// weights start `w_shift` bytes (a multiple of the type's alignment) past a 16-byte boundary, the columns
// `a_shift` (a multiple of 4), with 16 poisoned bytes around both (a decoder that read past its blocks would see
// them).
template <class Dec>
void expect_tile_matches(int n_rows, int64_t n_in, int n_cols, uint32_t seed, int w_shift = 0, int a_shift = 0) {
  constexpr int kPad = 16;
  const std::vector<unsigned char> blocks = ggml_blocks(Dec::kType);
  const int64_t n_blocks = static_cast<int64_t>(blocks.size() / Dec::kBytes);
  ASSERT_GT(n_blocks, 0);
  const int64_t per_row = n_in / Dec::kElems;
  const uint64_t w_stride = static_cast<uint64_t>(per_row * Dec::kBytes);
  std::vector<uint64_t> w_room((2 * kPad + w_shift + w_stride * static_cast<uint64_t>(n_rows) + 7) / 8);
  std::memset(w_room.data(), 0x5A, 8 * w_room.size());
  unsigned char* w = reinterpret_cast<unsigned char*>(w_room.data()) + kPad + w_shift;
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t i = 0; i < per_row; ++i) {
      std::memcpy(w + r * w_stride + i * Dec::kBytes, blocks.data() + ((r + i) % n_blocks) * Dec::kBytes, Dec::kBytes);
    }
  }
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const uint64_t act_stride = static_cast<uint64_t>(n_in / 32) * sizeof(format::block_q8_1);
  std::vector<uint64_t> a_room((2 * kPad + a_shift + act_stride * static_cast<uint64_t>(n_cols) + 7) / 8);
  std::memset(a_room.data(), 0x5A, 8 * a_room.size());
  unsigned char* act = reinterpret_cast<unsigned char*>(a_room.data()) + kPad + a_shift;
  std::vector<format::block_q8_1> col(static_cast<size_t>(n_in / 32));
  for (int c = 0; c < n_cols; ++c) {
    std::vector<float> x(static_cast<size_t>(n_in));
    for (float& v : x) v = dist(rng);
    x[3] = 0.0f;  // a zero and a large value in the first block
    x[5] = 40.0f;
    format::quantize_row_q8_1(x.data(), col.data(), n_in);
    std::memcpy(act + c * act_stride, col.data(), act_stride);
  }
  // Every way of making the sums floats (mma_tile.cuh's SumForm).
  for (const SumForm form : {SumForm::kConvert, SumForm::kBias, SumForm::kFold}) {
  const auto got = emulate_block<Dec>(w, w_stride, n_rows, act, act_stride, n_cols, static_cast<int>(n_in / 32), form);
  for (int c = 0; c < n_cols; ++c) {
    std::memcpy(col.data(), act + c * act_stride, act_stride);
    for (int r = 0; r < n_rows; ++r) {
      const float want = format::canonical_dot(Dec::kType, w + r * w_stride, col.data(), n_in);
      const float have = got[static_cast<size_t>(c)][static_cast<size_t>(r)];
      ASSERT_EQ(format::f32_bits(have), format::f32_bits(want))
          << format::traits(Dec::kType).name << " sum form "
          << static_cast<int>(form) << " row " << r << " column " << c << ": " << have << " vs " << want;
    }
  }
  }
}

class TiledProduct : public ::testing::TestWithParam<GgmlType> {};

TEST_P(TiledProduct, EveryRowAndColumnIsTheCanonicalDot) {
  ASSERT_TRUE(with_tiled_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    const bool k_quant = Dec::kElems == 256;
    // A full tile with several chunks of eight spans, a partial chunk (7 or 24 + 3 spans), spare rows and columns.
    expect_tile_matches<Dec>(kTileRows, k_quant ? 2048 : 1024, kTileCols, 3u);
    expect_tile_matches<Dec>(37, k_quant ? 768 : 224, 13, 4u);
    expect_tile_matches<Dec>(5, k_quant ? 256 : 32, 1, 5u);
  }));
}

// Rows and columns at every start the decoders' alignment allows (a file's tensors and an expert table's pointers
// need not sit on 16-byte boundaries), with partial last chunks.
TEST_P(TiledProduct, RowsAtEveryAlignmentGiveTheSameBits) {
  ASSERT_TRUE(with_tiled_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    const bool k_quant = Dec::kElems == 256;
    for (int w_shift = 0; w_shift < 16; w_shift += Dec::kAlign) {
      const int a_shift = 4 * (w_shift / Dec::kAlign) % 16;
      expect_tile_matches<Dec>(kTileRows, k_quant ? 1024 : 352, kTileCols, 6u, w_shift, a_shift);
    }
    expect_tile_matches<Dec>(37, k_quant ? 768 : 224, 13, 7u, Dec::kAlign, 8);
    expect_tile_matches<Dec>(5, k_quant ? 256 : 32, 1, 8u, 0, 12);
  }));
}

std::string type_name(const ::testing::TestParamInfo<GgmlType>& info) { return std::string(format::traits(info.param).name); }

INSTANTIATE_TEST_SUITE_P(TiledTypes, TiledProduct,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                           GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                           GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                                           GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ4_NL,
                                           GgmlType::IQ4_XS, GgmlType::MXFP4),
                         type_name);

// Every sum a span can have (|S| < 2^22) comes back from the biased MMA result as exactly float(S).
TEST(TiledProduct, BiasedSumsConvertExactly) {
  for (int s = -(1 << 22); s < (1 << 22); ++s) {
    const float f = unbias_sum(kSumBias + s);
    if (f != static_cast<float>(s)) FAIL() << "sum " << s << " came back as " << f;
  }
}

// kFold's first product equals the plain one for every sum a span can have, at scales of the kinds the decoders
// make (an f16 times a small integer or a short fraction, at the f16's extremes, of either sign); a zero product may
// differ only in its sign.
TEST(TiledProduct, FoldedProductsEqualThePlainOnes) {
  std::vector<float> scales;
  for (const float d : {65504.0f, 1.0f, 0.0078125f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f}) {
    for (const float k : {1.0f, 3.0f, 63.0f, 127.0f, -32.0f, -128.0f, 0.125f, 7.5f * 0.25f}) scales.push_back(d * k);
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    const float c0 = scales[i];
    const float nk0 = -(c0 * 12582912.0f);
    const int step = i % 8 == 0 ? 1 : 97;  // every sum for a few scales, a sample for the rest
    for (int s = -(1 << 22); s < (1 << 22); s += step) {
      const float want = c0 * static_cast<float>(s);
      const float have = folded_product(c0, kSumBias + s, nk0);
      if (want == 0.0f ? have != 0.0f : format::f32_bits(have) != format::f32_bits(want)) {
        FAIL() << "scale " << c0 << " sum " << s << ": " << have << " vs " << want;
      }
    }
  }
}

// A type without a tiled kernel stays on the warp-per-row kernels.
TEST(TiledProduct, TypesWithoutTilesAreDeclined) {
  EXPECT_FALSE(with_tiled_decoder(static_cast<uint32_t>(GgmlType::TQ1_0), [](auto) {}));
  EXPECT_FALSE(with_tiled_decoder(static_cast<uint32_t>(GgmlType::TQ2_0), [](auto) {}));
  EXPECT_FALSE(with_tiled_decoder(static_cast<uint32_t>(GgmlType::F32), [](auto) {}));
}

}  // namespace
}  // namespace strata::gpu
