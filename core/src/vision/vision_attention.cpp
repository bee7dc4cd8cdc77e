// 2-D RoPE, as llama.cpp's vision M-RoPE with sections [d/4, d/4, d/4, d/4] applies it: dims (i, i + d/2) rotate
// together ("rotate half"); pairs k < d/4 by row·10000^(−k/(d/4)), pairs k ≥ d/4 by column·10000^(−(k−d/4)/(d/4)).
// Attention: softmax(q·k / sqrt(d)) over every patch, the sum of exponentials in double, then Σ_j p_j v_j in
// ascending j.
#include "vision_attention.hpp"

#include <algorithm>
#include <cmath>

#include "vision_math.hpp"

namespace strata::vision::detail {
namespace {

// Copies head h's q or k (part 0 or 1) of every patch into a [n][d] block and rotates it.
void rope_head(const float* qkv, size_t n, uint32_t width, uint32_t d, uint32_t h, int part, const std::vector<int>& row,
               const std::vector<int>& col, float* dst) {
  const uint32_t half = d / 2, quarter = d / 4;
  for (size_t i = 0; i < n; ++i) {
    const float* src = qkv + i * 3 * width + static_cast<size_t>(part) * width + static_cast<size_t>(h) * d;
    float* o = dst + i * d;
    for (uint32_t k = 0; k < half; ++k) {
      const uint32_t kk = k < quarter ? k : k - quarter;
      const float pos = static_cast<float>(k < quarter ? row[i] : col[i]);
      const float theta = pos * std::pow(10000.0f, -static_cast<float>(kk) / static_cast<float>(quarter));
      const float c = std::cos(theta), s = std::sin(theta);
      const float x0 = src[k], x1 = src[k + half];
      o[k] = x0 * c - x1 * s;
      o[k + half] = x0 * s + x1 * c;
    }
  }
}

}  // namespace

void vision_attention(const float* qkv, size_t n, uint32_t n_head, uint32_t head_dim, const std::vector<int>& row,
                      const std::vector<int>& col, float* out, unsigned threads) {
  const uint32_t d = head_dim, width = n_head * head_dim;
  const size_t block = static_cast<size_t>(n) * d;
  std::vector<float> q(block * n_head), k(block * n_head), v(block * n_head);
  parallel_for(n_head, threads, [&](size_t h) {
    rope_head(qkv, n, width, d, static_cast<uint32_t>(h), 0, row, col, q.data() + h * block);
    rope_head(qkv, n, width, d, static_cast<uint32_t>(h), 1, row, col, k.data() + h * block);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(qkv + i * 3 * width + 2 * width + h * d, d, v.data() + h * block + i * d);
    }
  });

  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  constexpr size_t kQueries = 32;
  const size_t q_tiles = (n + kQueries - 1) / kQueries;
  parallel_for(n_head * q_tiles, threads, [&](size_t task) {
    const size_t h = task / q_tiles, i0 = (task % q_tiles) * kQueries, i1 = std::min(n, i0 + kQueries);
    const float* qh = q.data() + h * block;
    const float* kh = k.data() + h * block;
    const float* vh = v.data() + h * block;
    thread_local std::vector<float> p;
    thread_local std::vector<float> acc;
    p.resize(n);
    acc.resize(d);
    for (size_t i = i0; i < i1; ++i) {
      float max = -INFINITY;
      for (size_t j = 0; j < n; ++j) {
        p[j] = dot(qh + i * d, kh + j * d, d) * scale;
        max = std::max(max, p[j]);
      }
      double sum = 0.0;
      for (size_t j = 0; j < n; ++j) {
        p[j] = std::exp(p[j] - max);
        sum += static_cast<double>(p[j]);
      }
      const auto inv = static_cast<float>(1.0 / sum);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (size_t j = 0; j < n; ++j) {
        const float pj = p[j] * inv;
        const float* vj = vh + j * d;
        for (size_t e = 0; e < d; ++e) acc[e] += pj * vj[e];
      }
      std::copy(acc.begin(), acc.end(), out + i * width + h * d);
    }
  });
}

}  // namespace strata::vision::detail
