// Target attributes and the small vector helpers every kernel shares. The plugin is built for baseline x86-64;
// only functions marked with these attributes use AVX2/AVX-512, and they run only after isa.cpp has checked
// that the CPU has the features (so a machine without them loads the plugin and reports score 0).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define STRATA_AVX2 __attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt")))
#define STRATA_AVX512                                                                                      \
  __attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
// Helpers called from both paths: written for AVX2 and inlined into AVX-512 callers (a superset target).
#define STRATA_INLINE_AVX2 STRATA_AVX2 inline __attribute__((always_inline))

namespace strata::cpu {

STRATA_INLINE_AVX2 __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
STRATA_INLINE_AVX2 __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

template <class T>
inline T load_scalar(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The canonical tree over eight lanes: ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)).
STRATA_INLINE_AVX2 float tree_sum8(__m256 a) {
  const __m256 pairs = _mm256_hadd_ps(a, a);          // [a0+a1, a2+a3, ., . | a4+a5, a6+a7, ., .]
  const __m256 quads = _mm256_hadd_ps(pairs, pairs);  // [(a0+a1)+(a2+a3), ... | (a4+a5)+(a6+a7), ...]
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

// The same tree, for a largest element (order does not matter for max, but NaN handling follows maxps).
STRATA_INLINE_AVX2 float tree_max8(__m256 a) {
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
}

// Lanes 0..n-1 set (n in 0..8), as an integer mask for maskload/blend.
STRATA_INLINE_AVX2 __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace strata::cpu
