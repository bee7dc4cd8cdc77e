// ATTENTION: causal grouped-query attention of q (src0 [head_dim, n_head, n_tok]) over the k and v caches (src1,
// src2: f16, q8_0 or f32 [head_dim * n_kv_head, n_ctx]) up to each token's position (src3, read on the device).
// By default in float on tensor cores (attention_flash.cu, docs/CANONICAL_ARITHMETIC.md section 7), the same bits
// for a position whatever window computes it. With the canonical_double option in double, rounded to float once
// (section 6): s_j = scale * (q . k_j) in the 32-lane order (the reference's bits), e_j = exp(s_j - max s),
// out = (sum_j e_j v_j) / (sum_j e_j), on two paths chosen from the shapes: query tiles when the tokens' rows fill
// enough blocks (prefill), else split-K over the positions (decode and short windows).
// Backend 1.6 (gpt-oss) on every path: i[2] a sliding window (a token at p sees keys p - W + 1 .. p), src4 the sinks
// (a logit per q head in the softmax's denominator, no value row); the fusion writing the output's Q8_1 copy
// (fuse_attention_q8.cu) runs these same paths, so it carries both. Value heads of their own size (deepseek2's
// latent attention: keys of 576 values, values their first 512, src2 a view of src1) take the portable rows kernel
// (attention_flash.cu) in float; canonical_double refuses them (check_attention_f64ref).
#include <cstddef>
#include <cstdint>
#include <string>

#include "attention_paths.hpp"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kMaxHeadDim = 256;  // the _f64ref kernels (canonical_double); the float path: attention_paths.hpp
// Fewer prefill blocks than this leave most multiprocessors idle while each block walks all the positions:
// split-K spreads such a window better.
constexpr int64_t kMinPrefillBlocks = 32;

// src4, the sinks, when the op's struct holds it and it is set (plugin_api.h), else nullptr.
const strata_tensor* sinks_of(const strata_op& op) {
  if (op.struct_size < offsetof(strata_op, src4) + sizeof(strata_tensor) || op.src4.data == nullptr) return nullptr;
  return &op.src4;
}

// The caches' columns allow loads of 4 values at once (16 bytes of f32, 8 of f16; q8_0 blocks hold 32 values).
bool vector_loads(const strata_tensor& k, const strata_tensor& v, int64_t head_dim) {
  if (head_dim % 4 != 0) return false;
  if (format::is_type(k, GgmlType::Q8_0)) return true;
  const uint64_t align = format::is_type(k, GgmlType::F32) ? 16 : 8;
  for (const strata_tensor* c : {&k, &v}) {
    if (reinterpret_cast<uintptr_t>(c->data) % align != 0 || c->nb[1] % align != 0) return false;
  }
  return true;
}

}  // namespace

Check check_attention(const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  if (auto e = format::check_rows(q, "src0 (q)", GgmlType::F32)) return e;
  if (auto e = format::check_rows(pos, "src3 (positions)", GgmlType::I32)) return e;
  if (auto e = format::check_matrix(d, "dst", GgmlType::F32)) return e;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1], n_tok = q.ne[2];
  if (n_head <= 0 || n_kv_head <= 0 || n_head % n_kv_head != 0) {
    return "i[0] (n_head) " + std::to_string(n_head) + " must be a positive multiple of i[1] (n_kv_head) " +
           std::to_string(n_kv_head);
  }
  if (q.ne[1] != n_head || q.ne[3] != 1)
    return "src0 (q) must be [head_dim, n_head = " + std::to_string(n_head) + ", n_tok]";
  if (head_dim > attention::kRowsMaxKeyDim)
    return "head_dim " + std::to_string(head_dim) + " is above " + std::to_string(attention::kRowsMaxKeyDim);
  // Backend 1.6: value heads of their own size dv = src2.ne[0] / n_kv_head (deepseek2), src2 possibly a view of
  // src1's first columns (the keys' column stride).
  if (v.ne[0] <= 0 || v.ne[0] % n_kv_head != 0) {
    return "src2 (v cache) columns of " + std::to_string(v.ne[0]) + " values are not n_kv_head = " +
           std::to_string(n_kv_head) + " value heads";
  }
  const int64_t value_dim = v.ne[0] / n_kv_head;
  if (value_dim > attention::kRowsMaxValueDim) {
    return "value heads of " + std::to_string(value_dim) + " values are above " + std::to_string(attention::kRowsMaxValueDim);
  }
  for (const strata_tensor* c : {&k, &v}) {
    const char* what = c == &k ? "src1 (k cache)" : "src2 (v cache)";
    if (!format::is_type(*c, GgmlType::F16) && !format::is_type(*c, GgmlType::Q8_0) &&
        !format::is_type(*c, GgmlType::F32)) {
      return std::string(what) + " is " + format::type_name(c->type) + " (known: f16, q8_0, f32)";
    }
    if (auto e = format::check_matrix(*c, what)) return e;
    if (c == &k && c->ne[0] != head_dim * n_kv_head) {
      return std::string(what) + " columns must hold head_dim * n_kv_head = " + std::to_string(head_dim * n_kv_head) +
             " values, not " + std::to_string(c->ne[0]);
    }
    if (c->nb[1] % (format::is_type(*c, GgmlType::F32) ? 4 : 2) != 0)
      return std::string(what) + " columns are misaligned";
  }
  if (k.type != v.type) return std::string("src1 (k cache) and src2 (v cache) must have one type");
  if (k.ne[1] != v.ne[1]) return std::string("src1 (k cache) and src2 (v cache) must have as many columns");
  if (k.ne[1] > (int64_t{1} << 30)) return std::string("the caches have more than 2^30 columns");
  if (format::row_count(pos) != 1 || pos.ne[0] != n_tok) {
    return "src3 (positions) must hold one position per token (" + std::to_string(n_tok) + ")";
  }
  if (n_tok > 65535 || n_kv_head > 65535 || n_head > 65535) return std::string("more than 65535 tokens or heads");
  if (d.ne[0] != value_dim * n_head || d.ne[1] != n_tok) {
    return "dst must be [value_dim * n_head, n_tok] = [" + std::to_string(value_dim * n_head) + ", " +
           std::to_string(n_tok) + "]";
  }
  if (reinterpret_cast<uintptr_t>(d.data) % 4 != 0 || d.nb[1] % 4 != 0) return std::string("dst is misaligned");
  if (op.i[2] < 0) return "i[2] (sliding window) must be 0 or positive, not " + std::to_string(op.i[2]);
  if (const strata_tensor* sinks = sinks_of(op)) {
    if (auto e = format::check_rows(*sinks, "src4 (sinks)", GgmlType::F32)) return e;
    if (sinks->ne[0] != n_head) {
      return "src4 (sinks) must hold one logit per q head (" + std::to_string(n_head) + "), not " +
             std::to_string(sinks->ne[0]);
    }
  }
  return std::nullopt;
}

Check check_attention_f64ref(const strata_op& op) {
  const int64_t head_dim = op.src[0].ne[0], value_dim = op.src[2].ne[0] / op.i[1];
  if (head_dim > kMaxHeadDim) {
    return "head_dim " + std::to_string(head_dim) + " is above " + std::to_string(kMaxHeadDim) +
           ", the most canonical_double's attention kernels (attention_decode.cu, attention_prefill.cu) take";
  }
  if (value_dim != head_dim) {
    return "value heads of " + std::to_string(value_dim) + " values beside key heads of " + std::to_string(head_dim) +
           ": canonical_double's attention kernels take value heads of the keys' size only (the float path "
           "computes them)";
  }
  return std::nullopt;
}

namespace {

attention::Operands operands(const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1], n_tok = q.ne[2], n_ctx = k.ne[1];
  const int64_t group = n_head / n_kv_head;
  const strata_tensor* sinks = sinks_of(op);
  return attention::Operands{static_cast<const char*>(q.data),
                             q.nb[1],
                             q.nb[2],
                             static_cast<const char*>(k.data),
                             static_cast<const char*>(v.data),
                             k.nb[1],
                             v.nb[1],
                             static_cast<const int32_t*>(pos.data),
                             static_cast<char*>(d.data),
                             d.nb[1],
                             static_cast<int>(head_dim),
                             static_cast<int>(n_head),
                             static_cast<int>(group),
                             static_cast<int>(n_tok),
                             static_cast<int>(n_ctx),
                             vector_loads(k, v, head_dim) ? 1 : 0,
                             static_cast<double>(op.f[0]),
                             static_cast<int>(op.i[2]),
                             sinks != nullptr ? static_cast<const float*>(sinks->data) : nullptr,
                             static_cast<int>(v.ne[0] / n_kv_head)};
}

attention::Cache cache_of(const strata_op& op) {
  const strata_tensor& k = op.src[1];
  return format::is_type(k, GgmlType::F16)    ? attention::Cache::F16
         : format::is_type(k, GgmlType::Q8_0) ? attention::Cache::Q8_0
                                              : attention::Cache::F32;
}

// The query-tiled path, where the tokens' rows fill enough blocks and the device gives a block its shared memory.
bool takes_prefill(const Context& ctx, const strata_op& op) {
  const int64_t head_dim = op.src[0].ne[0], n_head = op.i[0], n_kv_head = op.i[1], n_tok = op.src[0].ne[2];
  return attention::prefill_blocks(n_tok, n_head / n_kv_head, head_dim, n_kv_head) >= kMinPrefillBlocks &&
         attention::prefill_fits(ctx, head_dim);
}

}  // namespace

bool attention_writes_q8(const Context& ctx, const strata_op& op) {
  if (!ctx.options().canonical_double) return attention::flash_writes_q8(ctx, operands(op), cache_of(op));
  return !takes_prefill(ctx, op) && attention::decode_quantizes(operands(op));
}

void run_attention(Context& ctx, const strata_op& op, unsigned char* q8) {
  const attention::Operands o = operands(op);
  const attention::Cache cache = cache_of(op);
  if (!ctx.options().canonical_double) {
    attention::run_flash(ctx, o, cache, op.i[1], q8);
  } else if (q8 == nullptr && takes_prefill(ctx, op)) {
    attention::run_prefill(ctx, o, cache, op.i[1]);
  } else {
    attention::run_decode(ctx, o, cache, q8);
  }
}

void run_attention(Context& ctx, const strata_op& op) { run_attention(ctx, op, nullptr); }

}  // namespace strata::gpu
