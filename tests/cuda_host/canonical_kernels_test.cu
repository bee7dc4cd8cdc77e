// The CUDA plugin's arithmetic, run on the host: every weight type's span decoder against
// format::canonical_decompose and dequantize_row, the warp's accumulation order (emulated lane by lane) against
// format::canonical_dot, the Q8_1 block quantizer against quantize_row_q8_1, and exp_c/silu_c against the format
// library's. Weight data: ggml's own blocks from tests/data/quant, and random bytes.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "act_quant.cuh"
#include "matvec.cuh"
#include "quant_decode.cuh"
#include "strata/format/canonical.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"

namespace strata::gpu {
namespace {

constexpr GgmlType kTypes[] = {
    GgmlType::Q4_0,    GgmlType::Q4_1,   GgmlType::Q5_0,  GgmlType::Q5_1,    GgmlType::Q8_0,   GgmlType::Q2_K,
    GgmlType::Q3_K,    GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,    GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
    GgmlType::IQ2_S,   GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S,   GgmlType::IQ1_M,  GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,  GgmlType::MXFP4,  GgmlType::TQ1_0, GgmlType::TQ2_0};

uint32_t bits(float f) { return format::f32_bits(f); }

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ggml's blocks of `type` (2048 values) from tests/data/quant.
std::vector<unsigned char> ggml_blocks(GgmlType type) {
  std::string name(format::traits(type).name);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return read_file(std::string(STRATA_TEST_DATA) + "/quant/" + name + ".blocks");
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Every span of `n_blocks` blocks: the decoder's g, c, b equal canonical_decompose's, and span_value equals
// dequantize_row, bit for bit.
template <class Dec>
void expect_spans_match(const std::vector<unsigned char>& data, int64_t n_blocks, const char* what) {
  constexpr int kSpans = Dec::kElems / 32;
  constexpr int kSubsPerSpan = 32 / Dec::kSub;
  const int64_t n = n_blocks * Dec::kElems;
  std::vector<float> deq(static_cast<size_t>(n));
  format::dequantize_row(Dec::kType, data.data(), deq.data(), n);
  format::CanonicalBlock ref;
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    format::canonical_decompose(Dec::kType, data.data(), blk, ref);
    for (int s = 0; s < kSpans; ++s) {
      Span sp;
      Dec::decode(data.data() + blk * Dec::kBytes, s, sp);
      for (int i = 0; i < 32; ++i) {
        const int g = static_cast<int8_t>(sp.g[i / 4] >> (8 * (i % 4)));
        ASSERT_EQ(g, ref.g[32 * s + i]) << what << " block " << blk << " span " << s << " value " << i;
        // A NaN scale (random bytes only) may come out with either sign: x - NaN and x + -NaN differ in the
        // sign bit on x86, and GPUs return their canonical NaN anyway.
        const float want = deq[static_cast<size_t>(blk * Dec::kElems + 32 * s + i)];
        const float got = span_value<Dec>(sp, i);
        if (!(std::isnan(want) && std::isnan(got))) {
          ASSERT_EQ(bits(got), bits(want)) << what << " dequantized value, block " << blk << " span " << s << " value " << i;
        }
      }
      for (int k = 0; k < kSubsPerSpan; ++k) {
        const int ref_k = s * kSubsPerSpan + k;
        ASSERT_EQ(bits(sp.c[k]), bits(ref.c[ref_k])) << what << " c, block " << blk << " span " << s << " sub " << k;
        if (Dec::kOffset) {
          ASSERT_EQ(bits(sp.b[k]), bits(ref.b[ref_k])) << what << " b, block " << blk << " span " << s << " sub " << k;
        }
      }
    }
  }
}

// The kernel's dot, emulated lane by lane: partials of a warp's lanes, accumulators fed by add_iteration, the
// xor-shuffle tree over lanes 0..7.
template <class Dec>
float emulated_warp_dot(const unsigned char* row, const unsigned char* act, int n_spans) {
  float acc[kAccumulators] = {};
  std::vector<float> p(kWarp);
  for (int base = 0; base < n_spans; base += kWarp) {
    for (int lane = 0; lane < kWarp; ++lane) {
      const int j = base + lane;
      p[static_cast<size_t>(lane)] = 0.0f;
      if (j >= n_spans) continue;
      Span sp;
      decode_row_span<Dec>(row, j, sp);
      uint32_t q[8];
      float da;
      load_q8_1(act, j, q, da);
      p[static_cast<size_t>(lane)] = span_partial<Dec>(sp, q, da);
    }
    for (int r = 0; r < kAccumulators; ++r) {
      acc[r] = add_iteration(acc[r], r, base, n_spans, [&](int src) { return p[static_cast<size_t>(src)]; });
    }
  }
  for (int mask = 1; mask < kAccumulators; mask *= 2) {
    float next[kAccumulators];
    for (int l = 0; l < kAccumulators; ++l) next[l] = acc[l] + acc[l ^ mask];
    std::memcpy(acc, next, sizeof acc);
  }
  return acc[0];
}

template <class Dec>
void expect_dot_matches(const std::vector<unsigned char>& row, int64_t n, uint32_t seed, const char* what) {
  for (const float scale : {1.0f, 1e-3f, 50.0f}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n), seed, scale);
    std::vector<format::block_q8_1> xq(static_cast<size_t>(n / 32));
    format::quantize_row_q8_1(x.data(), xq.data(), n);
    const float ref = format::canonical_dot(Dec::kType, row.data(), xq.data(), n);
    const float got = emulated_warp_dot<Dec>(row.data(), reinterpret_cast<const unsigned char*>(xq.data()),
                                              static_cast<int>(n / 32));
    EXPECT_EQ(bits(got), bits(ref)) << what << " scale " << scale << ": " << got << " vs " << ref;
  }
}

class SpanDecoder : public ::testing::TestWithParam<GgmlType> {};

TEST_P(SpanDecoder, MatchesCanonicalDecomposeOnGgmlBlocks) {
  ASSERT_TRUE(with_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    const std::vector<unsigned char> data = ggml_blocks(Dec::kType);
    ASSERT_EQ(data.size() % Dec::kBytes, 0u);
    expect_spans_match<Dec>(data, static_cast<int64_t>(data.size() / Dec::kBytes), "ggml blocks");
  }));
}

TEST_P(SpanDecoder, MatchesCanonicalDecomposeOnRandomBytes) {
  with_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    constexpr int64_t kBlocks = 64;
    expect_spans_match<Dec>(random_bytes(kBlocks * Dec::kBytes, 7u + static_cast<uint32_t>(Dec::kType)), kBlocks,
                            "random bytes");
  });
}

TEST_P(SpanDecoder, WarpDotMatchesCanonicalDot) {
  with_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    const std::vector<unsigned char> data = ggml_blocks(Dec::kType);
    const int64_t n_blocks = static_cast<int64_t>(data.size() / Dec::kBytes);
    // Whole row (several warp iterations' worth of spans), a short row (idle lanes), one block.
    for (const int64_t blocks : {n_blocks, n_blocks > 3 ? int64_t{3} : n_blocks, int64_t{1}}) {
      const std::vector<unsigned char> row(data.begin(), data.begin() + blocks * Dec::kBytes);
      expect_dot_matches<Dec>(row, blocks * Dec::kElems, 11u, "ggml blocks");
    }
    // A row long enough for several iterations of a 32-lane warp, from random bytes.
    const int64_t blocks = 160 * 32 / Dec::kElems;
    std::vector<unsigned char> row = random_bytes(static_cast<size_t>(blocks * Dec::kBytes), 99u);
    // Keep the scales finite so that the dot is a number (NaN payloads are not what this checks).
    std::vector<float> deq(static_cast<size_t>(blocks * Dec::kElems));
    format::dequantize_row(Dec::kType, row.data(), deq.data(), blocks * Dec::kElems);
    bool finite = true;
    for (float v : deq) finite = finite && std::isfinite(v);
    if (finite) expect_dot_matches<Dec>(row, blocks * Dec::kElems, 5u, "random bytes");
  });
}

std::string type_param_name(const ::testing::TestParamInfo<GgmlType>& info) {
  return std::string(format::traits(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SpanDecoder, ::testing::ValuesIn(kTypes), type_param_name);

// Q8_1: one block through the kernel's quantizer and through the format library's.
void expect_q8_1_block_matches(const float (&x)[32], const char* what) {
  uint32_t words[kQ8Words];
  quantize_block_q8_1(x, words);
  format::block_q8_1 ref;
  format::quantize_row_q8_1(x, &ref, 32);
  unsigned char got[kQ8Bytes];
  std::memcpy(got, words, sizeof got);
  EXPECT_EQ(std::memcmp(got, &ref, sizeof ref), 0) << what;
}

TEST(ActQuant, Q8_1BlockMatchesOnEdgeValues) {
  float x[32];
  for (float& v : x) v = 0.0f;
  expect_q8_1_block_matches(x, "zeros");
  for (int i = 0; i < 32; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * 0.0f;
  expect_q8_1_block_matches(x, "signed zeros");
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) * 1e-42f;  // subnormals: d rounds to 0 in fp16
  expect_q8_1_block_matches(x, "subnormal");
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i + 1) * 1e-7f;  // d an fp16 subnormal
  expect_q8_1_block_matches(x, "tiny");
  for (int i = 0; i < 32; ++i) x[i] = (i % 3 ? 1.0f : -1.0f) * FLT_MAX / static_cast<float>(i + 1);
  expect_q8_1_block_matches(x, "huge (d overflows fp16)");
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i) - 15.5f;  // amax 15.5: x * id lands on many halves
  expect_q8_1_block_matches(x, "halves");
  x[0] = 127.0f;
  for (int i = 1; i < 32; ++i) x[i] = static_cast<float>(i) + 0.5f - 16.0f;  // id = 1 exactly: every q a half
  expect_q8_1_block_matches(x, "exact halves");
  x[5] = -127.0f;
  expect_q8_1_block_matches(x, "both ends");
}

TEST(ActQuant, Q8_1RowsMatchOnRandomAndGgmlData) {
  const std::vector<float> r = random_floats(4096, 3u, 2.0f);
  for (size_t b = 0; b < r.size() / 32; ++b) {
    float x[32];
    std::memcpy(x, r.data() + 32 * b, sizeof x);
    expect_q8_1_block_matches(x, "random");
  }
  const std::vector<unsigned char> src = read_file(std::string(STRATA_TEST_DATA) + "/quant/act_Q8_1.src.f32");
  const std::vector<unsigned char> blocks = read_file(std::string(STRATA_TEST_DATA) + "/quant/act_Q8_1.blocks");
  ASSERT_EQ(src.size() / sizeof(float) / 32 * kQ8Bytes, blocks.size());
  for (size_t b = 0; b < src.size() / sizeof(float) / 32; ++b) {
    float x[32];
    std::memcpy(x, src.data() + b * sizeof x, sizeof x);
    uint32_t words[kQ8Words];
    quantize_block_q8_1(x, words);
    EXPECT_EQ(std::memcmp(words, blocks.data() + b * kQ8Bytes, kQ8Bytes), 0) << "ggml block " << b;
  }
}

TEST(CanonicalMath, ExpAndSiluMatchTheFormatLibrary) {
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, 88.72283935546875f, 88.7228f, 89.0f, -103.97208404541016f,
                           -103.9f, -87.0f, -100.0f, -126.5f * 0.6931472f, 127.5f * 0.6931472f, INFINITY, -INFINITY,
                           NAN, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f};
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-110.0f, 95.0f);
  for (int i = 0; i < 20000; ++i) xs.push_back(dist(rng));
  for (const float x : xs) {
    EXPECT_EQ(bits(exp_c(x)), bits(format::exp_c(x))) << "exp_c(" << x << ")";
    EXPECT_EQ(bits(silu_c(x)), bits(format::silu_c(x))) << "silu_c(" << x << ")";
  }
}

TEST(CanonicalMath, HalfAndE8M0ConversionsMatch) {
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(bits(half_to_float(static_cast<uint16_t>(h))), bits(format::fp16_to_fp32(static_cast<uint16_t>(h))));
  }
  for (uint32_t e = 0; e < 256; ++e) {
    ASSERT_EQ(bits(e8m0_half_to_float(static_cast<uint8_t>(e))), bits(format::e8m0_to_fp32_half(static_cast<uint8_t>(e))));
  }
}

TEST(CanonicalMath, ByteLaneSubtractionHasNoBorrows) {
  std::mt19937 rng(23);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t a = rng(), b = rng();
    uint32_t want = 0;
    for (int k = 0; k < 4; ++k) want |= ((((a >> (8 * k)) & 0xffu) - ((b >> (8 * k)) & 0xffu)) & 0xffu) << (8 * k);
    ASSERT_EQ(sub_bytes(a, b), want) << std::hex << a << " - " << b;
  }
}

}  // namespace
}  // namespace strata::gpu
