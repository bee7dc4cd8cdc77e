// exp_c and silu_c: section 5 of docs/CANONICAL_ARITHMETIC.md, operation for operation.
#include <cmath>
#include <cstdint>

#include "strata/format/canonical.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format {
namespace {

// 2^k for k in [-126, 127], built from its exponent bits.
float pow2(int k) { return f32_from_bits(static_cast<uint32_t>(k + 127) << 23); }

}  // namespace

float exp_c(float x) {
  if (std::isnan(x)) return x;
  if (x > f32_from_bits(0x42b17218u)) return INFINITY;
  if (x < f32_from_bits(0xc2cff1b5u)) return 0.0f;
  // Cody-Waite: k = round(x / ln2) (half to even, the default rounding mode), r = x - k*ln2 in two exact-ish steps.
  const float k = std::rint(x * f32_from_bits(0x3fb8aa3bu));
  float r = std::fma(k, -f32_from_bits(0x3f317200u), x);
  r = std::fma(k, -f32_from_bits(0x35bfbe8eu), r);
  // Degree-7 Taylor polynomial of e^r on |r| <= ln2/2, Horner form.
  float p = f32_from_bits(0x39500d01u);
  p = std::fma(p, r, f32_from_bits(0x3ab60b61u));
  p = std::fma(p, r, f32_from_bits(0x3c088889u));
  p = std::fma(p, r, f32_from_bits(0x3d2aaaabu));
  p = std::fma(p, r, f32_from_bits(0x3e2aaaabu));
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  // The range checks bound k to [-150, 128]; 2^k outside the normal exponents takes two exact scalings.
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * pow2(127)) * pow2(ki - 127);
  if (ki < -126) return (p * pow2(ki + 126)) * pow2(-126);
  return p * pow2(ki);
}

float silu_c(float x) { return x / (1.0f + exp_c(-x)); }

}  // namespace strata::format
