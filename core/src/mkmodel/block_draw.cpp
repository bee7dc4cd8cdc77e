#include "block_draw.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "rng.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"

namespace strata::mkmodel {
namespace {

using namespace strata::format;

template <class Block>
void store(uint8_t* out, const Block& b) {
  std::memcpy(out, &b, sizeof b);
}

template <size_t N>
void fill(Rng& r, uint8_t (&bytes)[N]) {
  r.fill(bytes, N);
}

// Small random fields taken a few bits at a time from one 64-bit draw.
class Bits {
 public:
  explicit Bits(Rng& r) : r_(r) {}
  uint32_t take(int n) {
    if (left_ < n) {
      v_ = r_.next();
      left_ = 64;
    }
    const auto out = static_cast<uint32_t>(v_ & ((uint64_t{1} << n) - 1));
    v_ >>= n;
    left_ -= n;
    return out;
  }
  // A sub-block scale in [lo, lo + 7]: some spread between sub-blocks, as real quantized weights have.
  uint8_t sub_scale(uint8_t lo) { return static_cast<uint8_t>(lo + take(3)); }

 private:
  Rng& r_;
  uint64_t v_ = 0;
  int left_ = 0;
};

// d rounded to `bits` significant bits, so that d times a small odd number (the mins' 1.5, 7.5, 15.5) is exact
// in f16 and the centring below is exact rather than off by a rounding.
float coarse(float d, int bits) {
  int exp = 0;
  const float m = std::frexp(d, &exp);
  return std::ldexp(std::round(std::ldexp(m, bits)), exp - bits);
}

// Symmetric formats: a random sign on d makes even an asymmetric code book (IQ4_NL's) zero-mean.
float random_sign(Rng& r, float d) { return (r.next() & 1) ? -d : d; }

// Q4_0: nibble 0 (-8) becomes 8 (0), so the codes run symmetrically over -7..7.
void draw_q4_0(Rng& r, float d, uint8_t* out) {
  block_q4_0 b;
  b.d = fp32_to_fp16(d);
  fill(r, b.qs);
  for (uint8_t& q : b.qs) {
    if ((q & 0x0f) == 0) q |= 0x08;
    if ((q >> 4) == 0) q |= 0x80;
  }
  store(out, b);
}

// Q5_0: code 0 (-16) becomes 16 (0) by setting its fifth bit, so the codes run over -15..15.
void draw_q5_0(Rng& r, float d, uint8_t* out) {
  block_q5_0 b;
  b.d = fp32_to_fp16(d);
  fill(r, b.qh);
  fill(r, b.qs);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < QK5_0 / 2; ++j) {
    if ((b.qs[j] & 0x0f) == 0 && ((qh >> j) & 1u) == 0) qh |= 1u << j;
    if ((b.qs[j] >> 4) == 0 && ((qh >> (j + 16)) & 1u) == 0) qh |= 1u << (j + 16);
  }
  std::memcpy(b.qh, &qh, 4);
  store(out, b);
}

// Q5_1: value = d q + m with q in 0..31; m = -15.5 d centres it.
void draw_q5_1(Rng& r, float d, uint8_t* out) {
  block_q5_1 b;
  d = coarse(d, 6);
  b.d = fp32_to_fp16(d);
  b.m = fp32_to_fp16(-15.5f * d);
  fill(r, b.qh);
  fill(r, b.qs);
  store(out, b);
}

// Q8_0: code -128 becomes 0, so the codes run symmetrically over -127..127.
void draw_q8_0(Rng& r, float d, uint8_t* out) {
  block_q8_0 b;
  b.d = fp32_to_fp16(d);
  r.fill(reinterpret_cast<uint8_t*>(b.qs), sizeof b.qs);
  for (int8_t& q : b.qs) {
    if (q == -128) q = 0;
  }
  store(out, b);
}

// Q2_K: value = d sc q - dmin m with q in 0..3; dmin = 1.5 d and m = sc centre every sub-block.
void draw_q2_K(Rng& r, float d, uint8_t* out) {
  block_q2_K b;
  d = coarse(d, 9);
  b.d = fp32_to_fp16(d);
  b.dmin = fp32_to_fp16(1.5f * d);
  Bits bits(r);
  for (uint8_t& s : b.scales) {
    const uint8_t sc = bits.sub_scale(8);
    s = static_cast<uint8_t>(sc | (sc << 4));
  }
  fill(r, b.qs);
  store(out, b);
}

// Q3_K: value = d (sc - 32) q with q = low 2 bits minus 4 where the hmask bit is clear, so -4..3; the code -4
// (low bits 0, hmask clear) becomes 0 by setting its hmask bit, so the codes run symmetrically over -3..3. The
// sixteen 6-bit scales are 32 + 8..15, packed as the decoder reads them: low nibbles in bytes 0-7 (scale j and
// j + 8 share byte j mod 8), the top two bits in bytes 8-11 (scale j at byte 8 + j % 4, bits 2 (j / 4)).
void draw_q3_K(Rng& r, float d, uint8_t* out) {
  block_q3_K b;
  b.d = fp32_to_fp16(d);
  fill(r, b.hmask);
  fill(r, b.qs);
  for (int half = 0; half < 2; ++half) {
    for (int shift = 0; shift < 4; ++shift) {
      const auto bit = static_cast<uint8_t>(1u << (4 * half + shift));
      for (int l = 0; l < 32; ++l) {
        if (((b.qs[32 * half + l] >> (2 * shift)) & 3) == 0) b.hmask[l] |= bit;
      }
    }
  }
  Bits bits(r);
  std::memset(b.scales, 0, sizeof b.scales);
  for (int j = 0; j < 16; ++j) {
    const int sc = 32 + bits.sub_scale(8);
    b.scales[j % 8] = static_cast<uint8_t>(b.scales[j % 8] | ((sc & 0x0f) << (4 * (j / 8))));
    b.scales[8 + j % 4] = static_cast<uint8_t>(b.scales[8 + j % 4] | ((sc >> 4) << (2 * (j / 4))));
  }
  store(out, b);
}

// Q4_K/Q5_K's 12 bytes of eight 6-bit scales and mins (the layout the decoder's scale_min_k4 reads).
void pack_scales_k4(const uint8_t (&sc)[8], const uint8_t (&m)[8], uint8_t (&out)[K_SCALE_SIZE]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

// Q4_K (q in 0..15, mean 7.5) and Q5_K (q in 0..31, mean 15.5): dmin = mean * d and min = scale centre every
// sub-block, with d and dmin both positive as real files have them.
template <class Block>
void draw_k_with_mins(Rng& r, float d, float q_mean, int d_bits, Block& b) {
  d = coarse(d, d_bits);
  b.d = fp32_to_fp16(d);
  b.dmin = fp32_to_fp16(q_mean * d);
  Bits bits(r);
  uint8_t sc[8];
  for (uint8_t& s : sc) s = bits.sub_scale(8);
  pack_scales_k4(sc, sc, b.scales);
  fill(r, b.qs);
}

void draw_q4_K(Rng& r, float d, uint8_t* out) {
  block_q4_K b;
  draw_k_with_mins(r, d, 7.5f, 7, b);
  store(out, b);
}

void draw_q5_K(Rng& r, float d, uint8_t* out) {
  block_q5_K b;
  draw_k_with_mins(r, d, 15.5f, 6, b);
  fill(r, b.qh);
  store(out, b);
}

// Q6_K: codes q - 32 in -32..31 under signed 8-bit sub-block scales; a random sign per sub-block centres them.
void draw_q6_K(Rng& r, float d, uint8_t* out) {
  block_q6_K b;
  fill(r, b.ql);
  fill(r, b.qh);
  Bits bits(r);
  for (int8_t& s : b.scales) {
    const int v = bits.sub_scale(8);
    s = static_cast<int8_t>(bits.take(1) ? -v : v);
  }
  b.d = fp32_to_fp16(d);
  store(out, b);
}

// IQ2_XS: grid magnitudes times sign patterns; random sign indices make every value's sign a fair coin.
void draw_iq2_xs(Rng& r, float d, uint8_t* out) {
  block_iq2_xs b;
  b.d = fp32_to_fp16(d);
  r.fill(reinterpret_cast<uint8_t*>(b.qs), sizeof b.qs);
  Bits bits(r);
  for (uint8_t& s : b.scales) s = static_cast<uint8_t>(bits.sub_scale(6) | (bits.sub_scale(6) << 4));
  store(out, b);
}

// IQ3_S: grid magnitudes with explicit sign bits, drawn at random.
void draw_iq3_s(Rng& r, float d, uint8_t* out) {
  block_iq3_s b;
  b.d = fp32_to_fp16(d);
  fill(r, b.qs);
  fill(r, b.qh);
  fill(r, b.signs);
  Bits bits(r);
  for (uint8_t& s : b.scales) s = static_cast<uint8_t>(bits.sub_scale(6) | (bits.sub_scale(6) << 4));
  store(out, b);
}

// IQ4_NL: its 16-value code book is not symmetric, so the block's sign is random.
void draw_iq4_nl(Rng& r, float d, uint8_t* out) {
  block_iq4_nl b;
  b.d = fp32_to_fp16(random_sign(r, d));
  fill(r, b.qs);
  store(out, b);
}

// MXFP4: E2M1 codes (a sign bit and 8 magnitudes, so random nibbles are zero-mean) under a power-of-two scale
// 2^(e-128). d is rarely a power of two, so each block takes one of the two powers around it, the lower with the
// probability that makes the mean square exactly d's: p lo^2 + (1 - p) (2 lo)^2 = d^2.
void draw_mxfp4(Rng& r, float d, uint8_t* out) {
  block_mxfp4 b;
  int exp = 0;
  const double m = std::frexp(static_cast<double>(d), &exp);  // d = m 2^exp, m in [0.5, 1)
  const double ratio = 2.0 * m;                                // d / lo with lo = 2^(exp-1)
  const double p_lo = (4.0 - ratio * ratio) / 3.0;
  const int lo = exp - 1 + 128;
  const int e = r.uniform() < p_lo ? lo : lo + 1;
  b.e = static_cast<uint8_t>(std::clamp(e, 2, 254));
  fill(r, b.qs);
  store(out, b);
}

using DrawBlock = void (*)(Rng&, float, uint8_t*);

DrawBlock block_drawer(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return draw_q4_0;
    case GgmlType::Q5_0: return draw_q5_0;
    case GgmlType::Q5_1: return draw_q5_1;
    case GgmlType::Q8_0: return draw_q8_0;
    case GgmlType::Q2_K: return draw_q2_K;
    case GgmlType::Q3_K: return draw_q3_K;
    case GgmlType::Q4_K: return draw_q4_K;
    case GgmlType::Q5_K: return draw_q5_K;
    case GgmlType::Q6_K: return draw_q6_K;
    case GgmlType::IQ2_XS: return draw_iq2_xs;
    case GgmlType::IQ3_S: return draw_iq3_s;
    case GgmlType::IQ4_NL: return draw_iq4_nl;
    case GgmlType::MXFP4: return draw_mxfp4;
    default: return nullptr;
  }
}

bool is_plain(GgmlType type) { return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16; }

void store_plain(GgmlType type, float v, uint8_t* out) {
  if (type == GgmlType::F32) {
    std::memcpy(out, &v, 4);
    return;
  }
  const uint16_t h = type == GgmlType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
  std::memcpy(out, &h, 2);
}

void draw_plain(GgmlType type, float rms, uint64_t seed, uint64_t tensor, uint64_t first, uint64_t count,
                uint8_t* out) {
  const size_t width = type == GgmlType::F32 ? 4 : 2;
  uint64_t i = first;
  while (i < first + count) {
    const uint64_t group = i / kPlainGroup;
    Rng r = Rng::for_block(seed, tensor, group);
    for (uint64_t skip = group * kPlainGroup; skip < i; ++skip) r.normal();
    const uint64_t end = std::min(first + count, (group + 1) * kPlainGroup);
    for (; i < end; ++i, out += width) store_plain(type, static_cast<float>(r.normal()) * rms, out);
  }
}

// Streams the unit-scale calibration draws from: no tensor of a model has this index.
constexpr uint64_t kCalibrationTensor = ~uint64_t{0};

double measure_unit_rms(GgmlType type) {
  const TypeTraits& tr = traits(type);
  constexpr int kBlocks = 512;
  std::vector<uint8_t> blocks(static_cast<size_t>(kBlocks) * tr.block_bytes);
  const DrawBlock draw = block_drawer(type);
  for (int b = 0; b < kBlocks; ++b) {
    Rng r = Rng::for_block(0, kCalibrationTensor, static_cast<uint64_t>(b));
    draw(r, 1.0f, blocks.data() + static_cast<size_t>(b) * tr.block_bytes);
  }
  std::vector<float> values(static_cast<size_t>(kBlocks) * tr.block_elems);
  dequantize_row(type, blocks.data(), values.data(), static_cast<int64_t>(values.size()));
  double sum_sq = 0;
  for (float v : values) sum_sq += static_cast<double>(v) * static_cast<double>(v);
  return std::sqrt(sum_sq / static_cast<double>(values.size()));
}

}  // namespace

bool can_draw(GgmlType type) { return is_plain(type) || block_drawer(type) != nullptr; }

double unit_rms(GgmlType type) {
  if (is_plain(type)) return 1.0;
  static std::mutex mutex;
  static std::array<double, 64> cache{};
  const auto id = static_cast<size_t>(type);
  std::lock_guard<std::mutex> lock(mutex);
  if (id >= cache.size()) throw std::invalid_argument("mkmodel: no random blocks for type id " + std::to_string(id));
  if (cache[id] == 0.0) cache[id] = measure_unit_rms(type);
  return cache[id];
}

void draw_elements(GgmlType type, float rms, uint64_t seed, uint64_t tensor, uint64_t first, uint64_t count,
                   uint8_t* out) {
  if (is_plain(type)) {
    draw_plain(type, rms, seed, tensor, first, count, out);
    return;
  }
  const DrawBlock draw = block_drawer(type);
  const TypeTraits& tr = traits(type);
  if (draw == nullptr) throw std::invalid_argument("mkmodel: no random blocks for type " + std::string(tr.name));
  if (first % tr.block_elems != 0 || count % tr.block_elems != 0) {
    throw std::invalid_argument("mkmodel: " + std::string(tr.name) + " elements must come in whole blocks");
  }
  const float d = static_cast<float>(static_cast<double>(rms) / unit_rms(type));
  const uint64_t first_block = first / tr.block_elems;
  const uint64_t n_blocks = count / tr.block_elems;
  for (uint64_t b = 0; b < n_blocks; ++b, out += tr.block_bytes) {
    Rng r = Rng::for_block(seed, tensor, first_block + b);
    draw(r, d, out);
  }
}

}  // namespace strata::mkmodel
