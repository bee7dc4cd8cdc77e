#include "vision_math.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/gelu_table.hpp"

namespace strata::vision::detail {

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& task) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(threads, n);
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < n; i = next++) task(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

namespace {

constexpr size_t kLanes = 8;

float reduce(const float (&acc)[kLanes], float tail) {
  const float a = (acc[0] + acc[4]) + (acc[2] + acc[6]);
  const float b = (acc[1] + acc[5]) + (acc[3] + acc[7]);
  return (a + b) + tail;
}

// Four dot products of x with w0..w3, each with the lanes and order of dot().
void dot4(const float* x, const float* const (&w)[4], size_t n, float* out) {
  float acc[4][kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const float xv = x[i + l];
      acc[0][l] += xv * w[0][i + l];
      acc[1][l] += xv * w[1][i + l];
      acc[2][l] += xv * w[2][i + l];
      acc[3][l] += xv * w[3][i + l];
    }
  }
  for (size_t k = 0; k < 4; ++k) {
    float tail = 0.0f;
    for (size_t j = i; j < n; ++j) tail += x[j] * w[k][j];
    out[k] = reduce(acc[k], tail);
  }
}

// Rows [r0, r0 + count) of w as floats: a view for F32, else decoded into `scratch`.
const float* rows_f32(const Matrix& w, size_t r0, size_t count, std::vector<float>& scratch) {
  if (w.type == format::GgmlType::F32) return reinterpret_cast<const float*>(w.data + r0 * w.row_bytes);
  scratch.resize(count * w.cols);
  for (size_t r = 0; r < count; ++r) {
    format::dequantize_row(w.type, w.data + (r0 + r) * w.row_bytes, scratch.data() + r * w.cols, w.cols);
  }
  return scratch.data();
}

}  // namespace

float dot(const float* a, const float* b, size_t n) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return reduce(acc, tail);
}

void linear(const float* x, size_t n, const Matrix& w, const std::vector<float>& b, float* y, unsigned threads) {
  // Tasks are tiles of (64 weight rows) x (128 input rows): the weight tile stays in L2 while input rows stream.
  constexpr size_t kWeightRows = 64, kInputRows = 128;
  const size_t out = w.rows, in = w.cols;
  const size_t w_tiles = (out + kWeightRows - 1) / kWeightRows, x_tiles = (n + kInputRows - 1) / kInputRows;
  parallel_for(w_tiles * x_tiles, threads, [&](size_t task) {
    thread_local std::vector<float> scratch;
    const size_t o0 = (task % w_tiles) * kWeightRows, o1 = std::min(out, o0 + kWeightRows);
    const size_t r0 = (task / w_tiles) * kInputRows, r1 = std::min(n, r0 + kInputRows);
    const float* wt = rows_f32(w, o0, o1 - o0, scratch);
    for (size_t r = r0; r < r1; ++r) {
      const float* xr = x + r * in;
      float* yr = y + r * out;
      size_t o = o0;
      for (; o + 4 <= o1; o += 4) {
        const float* const rows[4] = {wt + (o - o0) * in, wt + (o - o0 + 1) * in, wt + (o - o0 + 2) * in,
                                      wt + (o - o0 + 3) * in};
        dot4(xr, rows, in, yr + o);
      }
      for (; o < o1; ++o) yr[o] = dot(xr, wt + (o - o0) * in, in);
      if (!b.empty()) {
        for (o = o0; o < o1; ++o) yr[o] += b[o];
      }
    }
  });
}

void layer_norm(const float* x, size_t n, size_t width, const Norm& norm, float eps, float* y) {
  for (size_t r = 0; r < n; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    double sum = 0.0;
    for (size_t i = 0; i < width; ++i) sum += static_cast<double>(xr[i]);
    const auto mean = static_cast<float>(sum / static_cast<double>(width));
    double sum2 = 0.0;
    for (size_t i = 0; i < width; ++i) {
      yr[i] = xr[i] - mean;
      sum2 += static_cast<double>(yr[i] * yr[i]);
    }
    const auto variance = static_cast<float>(sum2 / static_cast<double>(width));
    const float scale = 1.0f / std::sqrt(variance + eps);
    for (size_t i = 0; i < width; ++i) yr[i] = yr[i] * scale * norm.w[i] + norm.b[i];
  }
}

float round_to_f16(float x) { return format::fp16_to_fp32(format::fp32_to_fp16(x)); }

namespace {

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

}  // namespace

float gelu(float x, bool f16_table) {
  if (!f16_table) return gelu_tanh(x);
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return format::gelu_f16_table()[format::fp32_to_fp16(x)];  // f16(gelu_tanh(f16(x))), the shared table
}

float quick_gelu(float x) { return x * (1.0f / (1.0f + std::exp(-1.702f * x))); }

}  // namespace strata::vision::detail
