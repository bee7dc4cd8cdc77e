#include "quantize_scale_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace strata::format::detail {

int nearest_int(float v) {
  // Adding 1.5*2^23 leaves the rounded integer (ties to even, the FPU's mode) in the low mantissa bits.
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

namespace {

// Weighted error of x against scale * q + min (min <= 0 is the negated offset).
float grid_error(int n, const float* x, const float* weights, const uint8_t* q, float scale, float min,
                 FitError kind) {
  float error = 0;
  for (int i = 0; i < n; ++i) {
    float diff = scale * static_cast<float>(q[i]) + min - x[i];
    diff = kind == FitError::absolute ? std::fabs(diff) : diff * diff;
    error += weights[i] * diff;
  }
  return error;
}

// The value of largest magnitude, with its sign (the first one on ties).
float signed_absmax(int n, const float* x) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

}  // namespace

float fit_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* q, float* min_out,
                        float rmin, float rdelta, int nstep, FitError error_kind) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  min = std::min(min, 0.0f);
  if (max == min) {
    std::fill(q, q + n, uint8_t{0});
    *min_out = -min;
    return 0.0f;
  }

  const float fnmax = static_cast<float>(nmax);
  const auto quantize_at = [&](float iscale, uint8_t* out) {
    for (int i = 0; i < n; ++i) {
      out[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    }
  };

  float iscale = fnmax / (max - min);
  float scale = 1 / iscale;
  quantize_at(iscale, q);
  float best_error = grid_error(n, x, weights, q, scale, min, error_kind);

  // Each candidate grid starts at the best fit's min so far, as in ggml.
  uint8_t candidate[256];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + fnmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float wl = weights[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float error = grid_error(n, x, weights, candidate, this_scale, this_min, error_kind);
    if (error < best_error) {
      std::copy(candidate, candidate + n, q);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

float fit_signed_scale(int n, int nmax, const float* x, int8_t* q) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < 1e-15f) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }

  const float fnmax = static_cast<float>(nmax);
  const auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
  // Weighted sums sum(w*x*l) and sum(w*l*l), w = x^2, for the grid of one inverse scale.
  const auto sums_at = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = 0;
    suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(level(iscale, i));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
  };
  const auto store = [&](float iscale) {
    for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(level(iscale, i) + nmax);
  };

  float iscale = -fnmax / max;
  float sumlx, suml2;
  sums_at(iscale, sumlx, suml2);
  store(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(fnmax + 0.1f * static_cast<float>(step)) / max;
    sums_at(iscale, sumlx, suml2);
    // Compares sumlx^2/suml2 (the error reduction of a least-squares fit) without dividing.
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      store(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_signed_scale_by_moves(int n, int nmax, const float* x, int8_t* q) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < 1e-15f) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    q[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      // The sums without quant i; the best level for x[i] under their scale is x[i] / scale.
      const float w = x[i] * x[i];
      const float li = static_cast<float>(q[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == q[i]) continue;
      slx += w * x[i] * static_cast<float>(new_l);
      sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      // Keeps the move when sumlx^2 / suml2 (the error reduction of the least-squares scale) grows.
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        q[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(q[i] + nmax);
  return sumlx / suml2;
}

}  // namespace strata::format::detail
