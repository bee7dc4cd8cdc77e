// The encoder's numeric pieces: a task pool, products against the file's matrices, LayerNorm, GELU. Plain float
// in fixed orders: a dot product keeps 8 running sums (lane l takes the elements l, l+8, ...) added pairwise at
// the end, so every output has the same bits whatever the thread count or the vector width the compiler picks.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "projector_weights.hpp"

namespace strata::vision::detail {

// Runs task(i) for i in [0, n) on up to `threads` threads (0: the machine's), each taking the next task.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& task);

float dot(const float* a, const float* b, size_t n);

// y[r] = W x[r] + b for n rows of x (w.cols floats each) into y (w.rows floats each); b may be empty.
void linear(const float* x, size_t n, const Matrix& w, const std::vector<float>& b, float* y, unsigned threads);

// LayerNorm of n rows of `width` values: (x − mean)/sqrt(var + eps)·w + b (statistics summed in double).
void layer_norm(const float* x, size_t n, size_t width, const Norm& norm, float eps, float* y);

// GELU, tanh form; with `f16_table`, as ggml's CPU table computes it: f16(gelu(f16(x))) for −10 < x < 10,
// 0 at or below −10, x at or above 10.
float gelu(float x, bool f16_table);
// x·sigmoid(1.702·x)
float quick_gelu(float x);

float round_to_f16(float x);

}  // namespace strata::vision::detail
