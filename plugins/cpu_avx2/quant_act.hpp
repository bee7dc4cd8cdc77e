// Activation rows in the canonical Q8_1 values (docs/CANONICAL_ARITHMETIC.md section 1), laid out for SIMD:
// the int8 values of a row contiguous, the fp16-rounded block scales and per-half integer sums beside them.
// Rows are padded to a multiple of 256 values with zero values and zero scales.
#pragma once

#include <cstdint>

#include "aligned_buffer.hpp"

namespace strata::cpu {

// One quantized row (read side).
struct QuantRow {
  const int8_t* qs;    // padded_values(n) values
  const float* da;     // one per 32 values: fp16_to_fp32(fp32_to_fp16(amax / 127))
  const int32_t* qlo;  // sum of q over values 0..15 of each block of 32
  const int32_t* qhi;  // sum of q over values 16..31
  const float* qsum_f; // (float)(qlo + qhi): exact, ready for the offset terms
  const float* qlo_f;  // (float)qlo
  const float* qhi_f;  // (float)qhi
};

inline int64_t padded_values(int64_t n) { return (n + 255) / 256 * 256; }

// Storage for `rows` quantized rows of n values each.
class QuantRows {
 public:
  void resize(int64_t rows, int64_t n);
  QuantRow row(int64_t r) const;
  // Quantizes x[0..n) into row r (n as given to resize; a multiple of 32).
  void quantize(int64_t r, const float* x);
  int64_t n() const { return n_; }

 private:
  unsigned char* base(int64_t r) const { return static_cast<unsigned char*>(base_) + r * row_bytes_; }
  AlignedBuffer storage_;
  void* base_ = nullptr;
  int64_t n_ = 0, padded_ = 0, row_bytes_ = 0;
};

}  // namespace strata::cpu
