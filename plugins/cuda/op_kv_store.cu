// KV_STORE: column t of src0 (f32 [kv_dim, n_tok]) into cache column src1[t] (f16 or q8_0 [kv_dim, n_ctx]),
// converted bit for bit as the format library does (kv_convert.cuh). Positions are read on the device; a
// position outside the cache (which the host's checks rule out) writes nothing rather than past the cache.
#include <string>

#include "kv_store_block.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 256;
constexpr int kQ8Block = kKvQ8Block;

struct StoreArgs {
  const char* x;
  char* cache;
  const int32_t* pos;
  uint64_t x_stride, c_stride;
  int64_t n, n_ctx, n_tok;
};

// One thread per value; blockIdx.y is the token.
__global__ void store_f16(StoreArgs a) {
  const int64_t t = blockIdx.y;
  const int32_t p = a.pos[t];
  if (p < 0 || p >= a.n_ctx) return;
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(t) * a.x_stride);
  auto* col = reinterpret_cast<uint16_t*>(a.cache + static_cast<uint64_t>(p) * a.c_stride);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < a.n;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    col[i] = f32_to_f16_bits(x[i]);
  }
}

// One thread per Q8_0 block: its amax is a sequential scan, as the reference's (NaN placement depends on order).
__global__ void store_q8_0(StoreArgs a) {
  const int64_t t = blockIdx.y;
  const int32_t p = a.pos[t];
  if (p < 0 || p >= a.n_ctx) return;
  const int64_t n_blocks = a.n / kQ8Block;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; b < n_blocks;
       b += static_cast<int64_t>(gridDim.x) * kBlock) {
    const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(t) * a.x_stride) + b * kQ8Block;
    kv_store_q8_0_block(x, a.cache + static_cast<uint64_t>(p) * a.c_stride, b);
  }
}

}  // namespace

Check check_kv_store(const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &cache = op.dst;
  if (auto e = format::check_matrix(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(pos, "src1 (positions)", GgmlType::I32)) return e;
  if (!format::is_type(cache, GgmlType::F16) && !format::is_type(cache, GgmlType::Q8_0)) {
    return "dst (cache) is " + format::type_name(cache.type) + " (known: f16, q8_0)";
  }
  if (auto e = format::check_matrix(cache, "dst (cache)")) return e;
  if (cache.nb[1] % 2 != 0) return std::string("dst (cache) columns are not 2-byte aligned");
  if (cache.ne[0] != x.ne[0]) {
    return "src0 columns hold " + std::to_string(x.ne[0]) + " values, the cache's " + std::to_string(cache.ne[0]);
  }
  if (format::row_count(pos) != 1 || pos.ne[0] != x.ne[1]) {
    return "src1 (positions) must hold one position per column of src0 (" + std::to_string(x.ne[1]) + ")";
  }
  if (x.ne[1] > 65535) return std::string("src0 has more than 65535 columns");
  return std::nullopt;
}

void run_kv_store(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &cache = op.dst;
  StoreArgs a{static_cast<const char*>(x.data),
              static_cast<char*>(cache.data),
              static_cast<const int32_t*>(pos.data),
              x.nb[1],
              cache.nb[1],
              x.ne[0],
              cache.ne[1],
              x.ne[1]};
  const bool f16 = format::is_type(cache, GgmlType::F16);
  const int64_t items = f16 ? a.n : a.n / kQ8Block;
  const int64_t want = (items + kBlock - 1) / kBlock;
  const dim3 grid(static_cast<unsigned>(want < 1024 ? want : 1024), static_cast<unsigned>(a.n_tok));
  if (f16) {
    store_f16<<<grid, kBlock, 0, ctx.stream()>>>(a);
  } else {
    store_q8_0<<<grid, kBlock, 0, ctx.stream()>>>(a);
  }
  check_launch("KV_STORE");
}

}  // namespace strata::gpu
