// The canonical arithmetic (docs/CANONICAL_ARITHMETIC.md). The decomposition w_i = c_k * g_i + b_k must give the
// dequantizer's values bit for bit; canonical_dot must equal the float64 dot of the decoded weights and decoded
// Q8_1 activations to within float rounding; and fixed rows must keep their exact bits (golden values, recorded
// after they passed the float64 bound), so that any change of operation order is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "quant_vectors.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"
#include "strata/format/quantize_weights.hpp"

namespace {

using strata::format::block_q8_1;
using strata::format::GgmlType;
namespace fmt = strata::format;

// A small generator of our own, so that the golden values do not depend on the standard library's distributions.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) with 24 bits.
  float uniform() { return static_cast<float>(static_cast<int32_t>(next() >> 40) - (1 << 23)) * 0x1p-23f; }
};

std::vector<float> seeded_activations(uint64_t seed, int64_t n) {
  SplitMix64 rng{seed};
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = 3.0f * rng.uniform();
  return x;
}

const std::vector<GgmlType>& quantized_types() {
  static const std::vector<GgmlType> types = {
      GgmlType::Q4_0,   GgmlType::Q4_1,   GgmlType::Q5_0,  GgmlType::Q5_1,    GgmlType::Q8_0,  GgmlType::Q2_K,
      GgmlType::Q3_K,   GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,    GgmlType::IQ2_XXS,
      GgmlType::IQ2_XS, GgmlType::IQ2_S,  GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M,
      GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::TQ1_0,   GgmlType::TQ2_0};
  return types;
}

std::string upper_name(GgmlType t) {
  std::string s(fmt::traits(t).name);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string type_param_name(const testing::TestParamInfo<GgmlType>& info) { return upper_name(info.param); }

// ggml's quantized test vector of a type: 2048 values as 8 rows of 256.
constexpr int64_t kRow = 256;
constexpr int kRows = 8;

std::vector<uint8_t> ggml_blocks(GgmlType t) {
  return strata::test::read_bytes(strata::test::quant_dir() / (upper_name(t) + ".blocks"));
}

const unsigned char* row_ptr(const std::vector<uint8_t>& bytes, GgmlType t, int r) {
  return bytes.data() + static_cast<size_t>(r) * fmt::row_bytes(t, kRow);
}

// Q8_1 activations and their decoded values (d * q, the values the integer sums stand for).
struct Q8Row {
  std::vector<block_q8_1> blocks;
  std::vector<double> decoded;
};

Q8Row quantize_q8_1(const std::vector<float>& x) {
  Q8Row row;
  row.blocks.resize(x.size() / 32);
  fmt::quantize_row_q8_1(x.data(), row.blocks.data(), static_cast<int64_t>(x.size()));
  for (const block_q8_1& b : row.blocks) {
    const double d = static_cast<double>(fmt::fp16_to_fp32(b.d));
    for (int8_t q : b.qs) row.decoded.push_back(d * q);
  }
  return row;
}

struct Float64Dot {
  double dot = 0;
  double magnitude = 0;  // sum |w_i| |x_i|: the scale of the rounding error
};

Float64Dot float64_dot(const std::vector<float>& w, const std::vector<double>& x) {
  Float64Dot r;
  for (size_t i = 0; i < w.size(); ++i) {
    r.dot += static_cast<double>(w[i]) * x[i];
    r.magnitude += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  return r;
}

// Float rounding of 64 span partials, each a few roundings deep, stays far below this; a wrong c_k, g_i or b_k
// does not.
constexpr double kRelativeBound = 1e-5;

class CanonicalTypes : public testing::TestWithParam<GgmlType> {};

// c_k * g_i + b_k, each operation rounded (as the dequantizer rounds them), is dequantize_row's value bit for bit.
void expect_decomposition_matches_dequantizer(GgmlType t, const unsigned char* blocks, int64_t nblocks,
                                              const std::string& what) {
  const fmt::CanonicalLayout lay = fmt::canonical_layout(t);
  std::vector<float> want(static_cast<size_t>(nblocks * lay.block_elems));
  fmt::dequantize_row(t, blocks, want.data(), static_cast<int64_t>(want.size()));
  std::vector<float> got;
  fmt::CanonicalBlock cb;
  for (int64_t b = 0; b < nblocks; ++b) {
    fmt::canonical_decompose(t, blocks, b, cb);
    for (int i = 0; i < lay.block_elems; ++i) {
      const int k = i / lay.sub_elems;
      const float cg = cb.c[k] * static_cast<float>(cb.g[i]);
      got.push_back(lay.has_offset ? cg + cb.b[k] : cg);
    }
  }
  EXPECT_EQ(strata::test::first_float_difference(want, got), "") << what;
}

TEST_P(CanonicalTypes, DecompositionIsTheDequantizerOnGgmlVectors) {
  const GgmlType t = GetParam();
  const std::vector<uint8_t> bytes = ggml_blocks(t);
  const int64_t nblocks = kRow * kRows / fmt::canonical_layout(t).block_elems;
  expect_decomposition_matches_dequantizer(t, bytes.data(), nblocks, "ggml's vector");
}

// Random bytes reach bit patterns a quantizer never writes (negative Q3_K scales, every grid index); the f16
// and E8M0 scale fields are set to finite values so that the comparison is of numbers.
void sanitize_scales(GgmlType t, unsigned char* block, SplitMix64& rng) {
  const auto f16 = [&](size_t offset) {
    const auto h = static_cast<uint16_t>(0x1000u + rng.next() % 0x2800u + ((rng.next() & 1) ? 0x8000u : 0u));
    std::memcpy(block + offset, &h, 2);
  };
  switch (t) {
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: f16(0); f16(2); break;
    case GgmlType::Q2_K: f16(80); f16(82); break;
    case GgmlType::Q3_K: f16(108); break;
    case GgmlType::Q6_K: f16(208); break;
    case GgmlType::TQ1_0: f16(52); break;
    case GgmlType::TQ2_0: f16(64); break;
    case GgmlType::MXFP4: block[0] = static_cast<uint8_t>(110 + rng.next() % 30); break;
    case GgmlType::IQ1_M: {
      // The f16 d lives in the top nibbles of the four scale words (bytes 49, 51, 53, 55).
      const auto h = static_cast<uint16_t>(0x1000u + rng.next() % 0x2800u);
      for (int w = 0; w < 4; ++w) {
        unsigned char& top = block[48 + 2 * w + 1];
        top = static_cast<unsigned char>((top & 0x0f) | (((h >> (4 * w)) & 0x0f) << 4));
      }
      break;
    }
    default: f16(0); break;  // every other type starts with its f16 d
  }
}

TEST_P(CanonicalTypes, DecompositionIsTheDequantizerOnRandomBlocks) {
  const GgmlType t = GetParam();
  const size_t block_bytes = fmt::traits(t).block_bytes;
  SplitMix64 rng{0x5eed0000u + static_cast<uint64_t>(t)};
  constexpr int kBlocks = 64;
  std::vector<unsigned char> bytes(block_bytes * kBlocks);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng.next());
  for (int b = 0; b < kBlocks; ++b) sanitize_scales(t, bytes.data() + b * block_bytes, rng);
  expect_decomposition_matches_dequantizer(t, bytes.data(), kBlocks, "random blocks");
}

// canonical_dot of ggml's row r against seeded_activations(1000 + r), checked against the float64 dot of the
// decoded values.
float checked_row_dot(GgmlType t, const std::vector<uint8_t>& bytes, int r) {
  std::vector<float> w(kRow);
  fmt::dequantize_row(t, row_ptr(bytes, t, r), w.data(), kRow);
  const Q8Row act = quantize_q8_1(seeded_activations(1000 + static_cast<uint64_t>(r), kRow));
  const Float64Dot ref = float64_dot(w, act.decoded);
  const float got = fmt::canonical_dot(t, row_ptr(bytes, t, r), act.blocks.data(), kRow);
  EXPECT_GT(ref.magnitude, 0.0);
  EXPECT_LE(std::fabs(static_cast<double>(got) - ref.dot), kRelativeBound * ref.magnitude)
      << upper_name(t) << " row " << r << ": canonical " << got << ", float64 " << ref.dot;
  return got;
}

TEST_P(CanonicalTypes, DotIsTheFloat64DotOfDecodedValues) {
  const std::vector<uint8_t> bytes = ggml_blocks(GetParam());
  for (int r = 0; r < kRows; ++r) checked_row_dot(GetParam(), bytes, r);
}

TEST_P(CanonicalTypes, DotOfAWholeRowReadsEverySpan) {
  // All 2048 values as one row: 64 spans, every accumulator used eight times.
  const GgmlType t = GetParam();
  const std::vector<uint8_t> bytes = ggml_blocks(t);
  const int64_t n = kRow * kRows;
  std::vector<float> w(static_cast<size_t>(n));
  fmt::dequantize_row(t, bytes.data(), w.data(), n);
  const Q8Row act = quantize_q8_1(seeded_activations(77, n));
  const Float64Dot ref = float64_dot(w, act.decoded);
  const float got = fmt::canonical_dot(t, bytes.data(), act.blocks.data(), n);
  EXPECT_LE(std::fabs(static_cast<double>(got) - ref.dot), kRelativeBound * ref.magnitude);
}

// Golden bits: canonical_dot of ggml's rows 0, 3 and 7 as checked_row_dot computes them (so each is within the
// float64 bound); recorded once they passed it. A difference means the order of operations changed.
const std::map<GgmlType, std::vector<uint32_t>>& golden_dots() {
  static const std::map<GgmlType, std::vector<uint32_t>> golden = {
      {GgmlType::Q4_0, {0xbc7e6252u, 0xc41044d1u, 0x442df72fu}},
      {GgmlType::Q4_1, {0x3b8f85a2u, 0xc39b7a45u, 0xc30a0e92u}},
      {GgmlType::Q5_0, {0x3cf37138u, 0x44bf885cu, 0x43b34de4u}},
      {GgmlType::Q5_1, {0x3cf031b2u, 0x44223e90u, 0xc375431bu}},
      {GgmlType::Q8_0, {0xbbf685e0u, 0xc40d0da8u, 0xc4158fe1u}},
      {GgmlType::Q2_K, {0xbc823f68u, 0x43d5c1bau, 0xc2e80764u}},
      {GgmlType::Q3_K, {0xbac25db8u, 0x43e07e46u, 0xc443ea12u}},
      {GgmlType::Q4_K, {0xbcced366u, 0xc480b577u, 0xc3eceaf1u}},
      {GgmlType::Q5_K, {0x3d2691feu, 0x44076438u, 0x440ef940u}},
      {GgmlType::Q6_K, {0x3d1b9378u, 0xc4c0f296u, 0xc3ce3f84u}},
      {GgmlType::IQ2_XXS, {0xbc199772u, 0xc436eaf3u, 0xc2587f70u}},
      {GgmlType::IQ2_XS, {0xbcf42eeau, 0xc49b598bu, 0x42efd3e0u}},
      {GgmlType::IQ2_S, {0x3d5734d2u, 0x42eaf908u, 0x432878a4u}},
      {GgmlType::IQ3_XXS, {0x3ca34322u, 0xc4752d3cu, 0xc2a69fb8u}},
      {GgmlType::IQ3_S, {0x3c632175u, 0xc3eae092u, 0x42f155b2u}},
      {GgmlType::IQ1_S, {0x3d0df51au, 0x44bcbe6au, 0xc34b027au}},
      {GgmlType::IQ1_M, {0xbb089698u, 0x440c1d2cu, 0x43f95e7bu}},
      {GgmlType::IQ4_NL, {0x3d194790u, 0x43a05151u, 0xc4523e8cu}},
      {GgmlType::IQ4_XS, {0x3d04f6eeu, 0x44812554u, 0xc19570c4u}},
      {GgmlType::MXFP4, {0xbd0f4396u, 0x4492db3bu, 0xc3e0bd6au}},
      {GgmlType::TQ1_0, {0xbbb3e080u, 0xc439d04du, 0xc393e93eu}},
      {GgmlType::TQ2_0, {0x3d0b685cu, 0xc42d1b92u, 0x4474ad9eu}},
  };
  return golden;
}

TEST_P(CanonicalTypes, GoldenBits) {
  const GgmlType t = GetParam();
  const std::vector<uint8_t> bytes = ggml_blocks(t);
  const int rows[] = {0, 3, 7};
  std::vector<uint32_t> got;
  for (int r : rows) got.push_back(fmt::f32_bits(checked_row_dot(t, bytes, r)));
  std::string got_text;
  for (uint32_t b : got) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08xu, ", b);
    got_text += hex;
  }
  const auto it = golden_dots().find(t);
  ASSERT_NE(it, golden_dots().end()) << "no golden bits for " << upper_name(t) << "; computed: " << got_text;
  EXPECT_EQ(it->second, got) << "computed: " << got_text;
}

TEST_P(CanonicalTypes, ReadsUnalignedRows) {
  const GgmlType t = GetParam();
  const std::vector<uint8_t> bytes = ggml_blocks(t);
  const size_t len = fmt::row_bytes(t, kRow);
  std::vector<uint8_t> shifted(len + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), len);
  const Q8Row act = quantize_q8_1(seeded_activations(5, kRow));
  std::vector<unsigned char> act_shifted(act.blocks.size() * sizeof(block_q8_1) + 1);
  std::memcpy(act_shifted.data() + 1, act.blocks.data(), act.blocks.size() * sizeof(block_q8_1));
  const float want = fmt::canonical_dot(t, bytes.data(), act.blocks.data(), kRow);
  // The activation pointer is only ever read through memcpy, so an odd address is fine.
  const float got = fmt::canonical_dot(t, shifted.data() + 1,
                                       reinterpret_cast<const block_q8_1*>(act_shifted.data() + 1), kRow);
  EXPECT_EQ(fmt::f32_bits(want), fmt::f32_bits(got));
}

INSTANTIATE_TEST_SUITE_P(Format, CanonicalTypes, testing::ValuesIn(quantized_types()), type_param_name);

TEST(CanonicalDot, CoversExactlyTheQuantizedWeightTypes) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = fmt::type_traits(id);
    if (!tr) continue;
    const bool listed = std::find(quantized_types().begin(), quantized_types().end(), tr->type) !=
                        quantized_types().end();
    EXPECT_EQ(fmt::has_canonical_dot(tr->type), listed) << tr->name;
  }
}

TEST(CanonicalDot, RejectsPartialBlocksAndFloatTypes) {
  std::vector<uint8_t> w(1024);
  std::vector<block_q8_1> a(16);
  EXPECT_THROW(fmt::canonical_dot(GgmlType::Q4_K, w.data(), a.data(), 128), strata::Error);
  EXPECT_THROW(fmt::canonical_dot(GgmlType::Q4_0, w.data(), a.data(), 48), strata::Error);
  EXPECT_THROW(fmt::canonical_dot(GgmlType::F16, w.data(), a.data(), 64), strata::Error);
  EXPECT_THROW(fmt::canonical_dot_f(GgmlType::Q8_0, w.data(), nullptr, 32), strata::Error);
}

// ---- float weights ----------------------------------------------------------------------------------------

class CanonicalFloatTypes : public testing::TestWithParam<GgmlType> {};

TEST_P(CanonicalFloatTypes, DotIsTheFloat64Dot) {
  const GgmlType t = GetParam();
  const std::vector<float> src = strata::test::read_f32(strata::test::quant_dir() / "Q4_K.src.f32");
  const int64_t n = 1000;  // not a multiple of 8: the last accumulators get fewer terms
  std::vector<uint8_t> row(static_cast<size_t>(n) * fmt::traits(t).block_bytes);
  for (int64_t i = 0; i < n; ++i) {
    const float v = src[static_cast<size_t>(i)];
    if (t == GgmlType::F32) std::memcpy(row.data() + 4 * i, &v, 4);
    const uint16_t h = t == GgmlType::F16 ? fmt::fp32_to_fp16(v) : fmt::fp32_to_bf16(v);
    if (t != GgmlType::F32) std::memcpy(row.data() + 2 * i, &h, 2);
  }
  std::vector<float> w(static_cast<size_t>(n));
  fmt::dequantize_row(t, row.data(), w.data(), n);
  const std::vector<float> x = seeded_activations(9, n);
  const Float64Dot ref = float64_dot(w, std::vector<double>(x.begin(), x.end()));
  const float got = fmt::canonical_dot_f(t, row.data(), x.data(), n);
  EXPECT_LE(std::fabs(static_cast<double>(got) - ref.dot), 1e-6 * ref.magnitude);

  // Golden bits, recorded after the bound above held.
  static const std::map<GgmlType, uint32_t> golden = {
      {GgmlType::F32, 0x441041f9u}, {GgmlType::F16, 0x441040f3u}, {GgmlType::BF16, 0x441084e8u}};
  const auto it = golden.find(t);
  ASSERT_NE(it, golden.end()) << "no golden bits; computed 0x" << std::hex << fmt::f32_bits(got);
  EXPECT_EQ(it->second, fmt::f32_bits(got)) << "computed 0x" << std::hex << fmt::f32_bits(got);
}

INSTANTIATE_TEST_SUITE_P(Format, CanonicalFloatTypes, testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16),
                         type_param_name);

// ---- exp_c and silu_c -------------------------------------------------------------------------------------

// |exp_c(x) - e^x| in units of the float spacing at e^x.
double ulp_error(float x) {
  const double exact = std::exp(static_cast<double>(x));
  const float got = fmt::exp_c(x);
  const double rounded = static_cast<double>(static_cast<float>(exact));
  const double ulp = rounded < 0x1p-126 ? 0x1p-149
                                        : std::ldexp(1.0, std::ilogb(rounded) - 23);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

TEST(ExpC, WithinTwoUlpOverTheFiniteRange) {
  // Every 61st float from -103.97 to 88.72 (about 33 million checked values would be slow under sanitizers).
  double worst = 0;
  float worst_x = 0;
  int64_t checked = 0;
  const auto sweep = [&](uint32_t from_bits, uint32_t to_bits) {
    for (uint32_t b = from_bits; b < to_bits; b += 61) {
      const float x = fmt::f32_from_bits(b);
      const double e = ulp_error(x);
      ++checked;
      if (e > worst) {
        worst = e;
        worst_x = x;
      }
    }
  };
  sweep(0x00000000u, 0x42b17218u);  // +0 .. 88.7228
  sweep(0x80000000u, 0xc2cff1b5u);  // -0 .. -103.972
  EXPECT_GT(checked, 30'000'000 / 61);
  EXPECT_LT(worst, 2.0) << "worst at x = " << worst_x;
  std::printf("exp_c: worst error %.3f ulp at x = %.9g over %lld values\n", worst, static_cast<double>(worst_x),
              static_cast<long long>(checked));
}

TEST(ExpC, SpecialValues) {
  EXPECT_TRUE(std::isnan(fmt::exp_c(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fmt::exp_c(INFINITY), INFINITY);
  EXPECT_EQ(fmt::f32_bits(fmt::exp_c(-INFINITY)), 0u);
  EXPECT_EQ(fmt::exp_c(0.0f), 1.0f);
  EXPECT_EQ(fmt::exp_c(-0.0f), 1.0f);
  // Just above the overflow threshold: +inf; just below the underflow threshold: +0.
  EXPECT_EQ(fmt::exp_c(fmt::f32_from_bits(0x42b17219u)), INFINITY);
  EXPECT_EQ(fmt::f32_bits(fmt::exp_c(fmt::f32_from_bits(0xc2cff1b6u))), 0u);
  // The last float below ln(FLT_MAX) stays finite; e^-103 is 1.32 * 2^-149, which rounds to the smallest subnormal.
  EXPECT_TRUE(std::isfinite(fmt::exp_c(fmt::f32_from_bits(0x42b17217u))));
  EXPECT_EQ(fmt::f32_bits(fmt::exp_c(-103.0f)), 1u);
  // Exact powers of two where r is exactly 0: k ln2 is not a float, so spot-check 1 and e instead.
  EXPECT_EQ(fmt::exp_c(1.0f), static_cast<float>(std::exp(1.0)));
}

TEST(SiluC, IsOneDivisionOfExpC) {
  SplitMix64 rng{3};
  for (int i = 0; i < 10000; ++i) {
    const float x = 40.0f * rng.uniform();
    const float want = x / (1.0f + fmt::exp_c(-x));
    EXPECT_EQ(fmt::f32_bits(fmt::silu_c(x)), fmt::f32_bits(want)) << x;
    const double exact = static_cast<double>(x) / (1.0 + std::exp(-static_cast<double>(x)));
    EXPECT_NEAR(static_cast<double>(fmt::silu_c(x)), exact, 4e-7 * std::fabs(exact) + 1e-30);
  }
  EXPECT_EQ(fmt::silu_c(0.0f), 0.0f);
  EXPECT_EQ(fmt::silu_c(-200.0f), 0.0f);  // exp_c(200) is +inf: x / inf
  EXPECT_EQ(fmt::silu_c(200.0f), 200.0f);
}

// ---- an expert ------------------------------------------------------------------------------------------

struct TestExpert {
  std::vector<uint8_t> gate, up, down;
  fmt::ExpertMatrices m;
};

std::vector<uint8_t> quantized_matrix(GgmlType t, int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * fmt::row_bytes(t, static_cast<uint64_t>(cols)));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> v = seeded_activations(seed + static_cast<uint64_t>(r), cols);
    for (float& x : v) x *= 0.05f;
    const size_t stride = fmt::row_bytes(t, static_cast<uint64_t>(cols));
    fmt::quantize_row(t, v.data(), bytes.data() + static_cast<size_t>(r) * stride, cols);
  }
  return bytes;
}

TestExpert make_expert(GgmlType gate_up, GgmlType down, int64_t n_embd, int64_t n_ff) {
  TestExpert e;
  e.gate = quantized_matrix(gate_up, n_ff, n_embd, 100);
  e.up = quantized_matrix(gate_up, n_ff, n_embd, 200);
  e.down = quantized_matrix(down, n_embd, n_ff, 300);
  e.m = {gate_up, gate_up, down, e.gate.data(), e.up.data(), e.down.data(), n_embd, n_ff};
  return e;
}

TEST(CanonicalExpert, IsSectionThreeStepByStep) {
  const TestExpert e = make_expert(GgmlType::Q4_K, GgmlType::Q6_K, 256, 512);
  const std::vector<float> x = seeded_activations(11, 256);
  const float weight = 0.375f;
  std::vector<float> out(256);
  fmt::canonical_expert_row(e.m, x.data(), weight, out.data());

  // The same steps spelled out: Q8_1(x), gate and up dots, swiglu, Q8_1(h), down dots, times the weight.
  const Q8Row xq = quantize_q8_1(x);
  std::vector<float> h(512);
  const size_t in_row = fmt::row_bytes(GgmlType::Q4_K, 256);
  for (size_t r = 0; r < 512; ++r) {
    const float g = fmt::canonical_dot(GgmlType::Q4_K, e.gate.data() + r * in_row, xq.blocks.data(), 256);
    const float u = fmt::canonical_dot(GgmlType::Q4_K, e.up.data() + r * in_row, xq.blocks.data(), 256);
    h[r] = (g / (1.0f + fmt::exp_c(-g))) * u;
  }
  const Q8Row hq = quantize_q8_1(h);
  const size_t down_row = fmt::row_bytes(GgmlType::Q6_K, 512);
  for (size_t r = 0; r < 256; ++r) {
    const float y = fmt::canonical_dot(GgmlType::Q6_K, e.down.data() + r * down_row, hq.blocks.data(), 512);
    ASSERT_EQ(fmt::f32_bits(weight * y), fmt::f32_bits(out[r])) << "row " << r;
  }
}

TEST(CanonicalExpert, IsCloseToTheFloat64Expert) {
  // Against the expert computed in float64 from the dequantized weights with unquantized activations: the
  // difference is the Q8_1 rounding of x and h (about 1% per element at most), far below a wrong result.
  const TestExpert e = make_expert(GgmlType::Q8_0, GgmlType::Q8_0, 128, 96);
  const std::vector<float> x = seeded_activations(12, 128);
  std::vector<float> out(128);
  fmt::canonical_expert_row(e.m, x.data(), 0.5f, out.data());
  std::vector<float> gate(96 * 128), up(96 * 128), down(128 * 96);
  fmt::dequantize_row(GgmlType::Q8_0, e.gate.data(), gate.data(), 96 * 128);
  fmt::dequantize_row(GgmlType::Q8_0, e.up.data(), up.data(), 96 * 128);
  fmt::dequantize_row(GgmlType::Q8_0, e.down.data(), down.data(), 128 * 96);
  std::vector<double> h(96);
  for (int r = 0; r < 96; ++r) {
    double g = 0, u = 0;
    for (int i = 0; i < 128; ++i) {
      g += static_cast<double>(gate[r * 128 + i]) * static_cast<double>(x[i]);
      u += static_cast<double>(up[r * 128 + i]) * static_cast<double>(x[i]);
    }
    h[r] = g / (1.0 + std::exp(-g)) * u;
  }
  double err = 0, norm = 0;
  for (int r = 0; r < 128; ++r) {
    double y = 0;
    for (int i = 0; i < 96; ++i) y += static_cast<double>(down[r * 96 + i]) * h[i];
    const double diff = 0.5 * y - static_cast<double>(out[r]);
    err += diff * diff;
    norm += 0.25 * y * y;
  }
  ASSERT_GT(norm, 0.0);
  EXPECT_LT(err / norm, 1e-3);
}

TEST(CanonicalExpert, FloatMatricesSkipTheActivationQuantization) {
  // F16 gate/up/down: every dot is canonical_dot_f on the float rows, h stays float.
  const int64_t n_embd = 64, n_ff = 40;
  SplitMix64 rng{21};
  std::vector<uint16_t> gate(n_ff * n_embd), up(n_ff * n_embd), down(n_embd * n_ff);
  for (auto* m : {&gate, &up, &down}) {
    for (uint16_t& v : *m) v = fmt::fp32_to_fp16(0.1f * rng.uniform());
  }
  const fmt::ExpertMatrices m{GgmlType::F16, GgmlType::F16, GgmlType::F16, gate.data(), up.data(), down.data(),
                              n_embd, n_ff};
  const std::vector<float> x = seeded_activations(22, n_embd);
  std::vector<float> out(n_embd);
  fmt::canonical_expert_row(m, x.data(), 2.0f, out.data());
  std::vector<float> h(n_ff);
  for (int64_t r = 0; r < n_ff; ++r) {
    const float g = fmt::canonical_dot_f(GgmlType::F16, gate.data() + r * n_embd, x.data(), n_embd);
    const float u = fmt::canonical_dot_f(GgmlType::F16, up.data() + r * n_embd, x.data(), n_embd);
    h[r] = fmt::swiglu_c(g, u);
  }
  for (int64_t r = 0; r < n_embd; ++r) {
    const float y = fmt::canonical_dot_f(GgmlType::F16, down.data() + r * n_ff, h.data(), n_ff);
    EXPECT_EQ(fmt::f32_bits(2.0f * y), fmt::f32_bits(out[r])) << r;
  }
}

TEST(CanonicalExpert, GoldenBits) {
  // A Q4_K/Q6_K expert and a Q8_0/Q4_0 one; FNV-1a of the output rows' bytes, recorded after the step-by-step
  // and float64 tests above passed.
  const auto fnv = [](const std::vector<float>& v) {
    uint64_t h = 0xcbf29ce484222325ull;
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
  };
  const TestExpert a = make_expert(GgmlType::Q4_K, GgmlType::Q6_K, 256, 512);
  const TestExpert b = make_expert(GgmlType::Q8_0, GgmlType::Q4_0, 128, 96);
  std::vector<float> out_a(256), out_b(128);
  fmt::canonical_expert_row(a.m, seeded_activations(31, 256).data(), 0.625f, out_a.data());
  fmt::canonical_expert_row(b.m, seeded_activations(32, 128).data(), 0.375f, out_b.data());
  const uint64_t golden_a = 0x7016b1b8478d95b9ull, golden_b = 0x61659ae876c879dfull;
  EXPECT_EQ(fnv(out_a), golden_a) << std::hex << "computed 0x" << fnv(out_a);
  EXPECT_EQ(fnv(out_b), golden_b) << std::hex << "computed 0x" << fnv(out_b);
}

TEST(CanonicalExpert, RejectsRowsThatAreNotWholeBlocks) {
  std::vector<uint8_t> buf(1 << 16);
  const fmt::ExpertMatrices m{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q8_0, buf.data(), buf.data(), buf.data(),
                              128, 64};
  std::vector<float> x(128), out(128);
  EXPECT_THROW(fmt::canonical_expert_row(m, x.data(), 1.0f, out.data()), strata::Error);
}

}  // namespace
