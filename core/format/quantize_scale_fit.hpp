// The scale searches ggml's K-quant reference quantizers run on each sub-block (internal to strata_format).
// Every float step keeps ggml's order of operations, so that with -ffp-contract=off the chosen scales and
// quants are the ones ggml picks, not merely close to them.
#pragma once

#include <cstdint>

namespace strata::format::detail {

// Round to nearest, ties to even, through the 1.5*2^23 trick ggml uses (valid for |v| < 2^22).
int nearest_int(float v);

// How fit_scale_and_min scores a candidate grid: weighted squared or weighted absolute errors.
enum class FitError { squared, absolute };

// Fits x[i] ~ scale * q[i] - min_out with q in [0, nmax] (an asymmetric grid), weighting each error by weights[i].
// Starts from the plain min/max grid, then tries nstep + 1 stretched grids whose inverse scales are
// (nmax + rmin + rdelta * k) / (max - min), each refitted by weighted least squares; keeps the smallest error.
// min is clamped to <= 0, so min_out >= 0. Returns the scale; q receives the quants. n <= 256.
float fit_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* q, float* min_out,
                        float rmin, float rdelta, int nstep, FitError error_kind);

// Fits x[i] ~ scale * (q[i] - nmax) with q in [0, 2*nmax - 1] (a signed grid anchored at the value of largest
// magnitude), weighting by x[i]^2. Tries 18 inverse scales around -nmax / max and keeps the least-squares
// scale of the best. Returns 0 and all-zero quants for a group with nothing above 1e-15.
float fit_signed_scale(int n, int nmax, const float* x, int8_t* q);

// The same signed grid for very few levels (Q3_K): starts from -nmax / max, then up to 5 passes move single
// quants to the level that best fits the least-squares scale of the others, keeping each move that lowers the
// x^2-weighted error. Returns that scale; q receives levels + nmax. Zero groups as fit_signed_scale.
float fit_signed_scale_by_moves(int n, int nmax, const float* x, int8_t* q);

}  // namespace strata::format::detail
