// The Qwen3-VL vision encoder as ops on a backend (the engine's: on a GPU its device runs the whole encoder), the
// same steps as encoder.cpp: the patch embedding's two kernels as MUL_MATs over the patch matrix built here, the
// resized position table added, then per block LAYER_NORM, the qkv product, ROPE mode 24 on q and k, ATTENTION
// over every patch (the keys and values stand as a "cache" of n columns, f32 or with f16_attention stored as f16 by
// KV_STORE, and every query sits at position n - 1, so each sees all of them), the output product, the residual,
// LAYER_NORM, up, GELU, down, the residual; the mergers over h read as rows of four patches (the 2x2 order makes
// a merged token's patches consecutive).
// The weights move to the device once per projector and backend; per image only the patch matrix, the position
// rows and the positions go up and the rows come down.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "patch_grid.hpp"
#include "projector_weights.hpp"
#include "strata/backend.hpp"
#include "strata/device_memory.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/op_builders.hpp"
#include "strata/op_profile.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"
#include "vision_math.hpp"

namespace strata::vision {

// The projector's weights where a backend's ops can address them: the mapped file's bytes for a backend on host
// memory, copies in device memory otherwise (made on first use, kept while the projector and that backend live).
// The backend is known by its lifetime token, not its address (a backend made later may sit at a freed one's
// address); copies whose backend is gone are let go of without releasing them through its dead memory.
struct DeviceProjector {
  std::weak_ptr<const void> owner;
  DeviceMemory* mem = nullptr;
  std::vector<Buffer<uint8_t>> held;
  std::unordered_map<const void*, const void*> placed;

  explicit DeviceProjector(Backend& b) : owner(b.lifetime()), mem(b.device_memory()) {}
  DeviceProjector(const DeviceProjector&) = delete;
  DeviceProjector& operator=(const DeviceProjector&) = delete;
  ~DeviceProjector() {
    if (owner.expired()) {
      for (Buffer<uint8_t>& b : held) b.abandon();
    }
  }
  bool made_for(const Backend& b) const {
    const std::weak_ptr<const void> other = b.lifetime();
    return !owner.expired() && !owner.owner_before(other) && !other.owner_before(owner);
  }

  const void* place(const void* host, uint64_t bytes) {
    if (mem == nullptr) return host;
    if (const auto it = placed.find(host); it != placed.end()) return it->second;
    Buffer<uint8_t>& b = held.emplace_back(bytes, mem);
    mem->upload(b.data(), host, bytes);
    placed.emplace(host, b.data());
    return b.data();
  }
  strata_tensor matrix(const Matrix& m) {
    return make_tensor(place(m.data, m.row_bytes * m.rows), m.type, {m.cols, m.rows});
  }
  strata_tensor vector(const std::vector<float>& v) {
    if (v.empty()) return no_tensor();
    return tensor_f32(static_cast<const float*>(place(v.data(), v.size() * sizeof(float))),
                      {static_cast<int64_t>(v.size())});
  }
};

namespace {

// An f32 buffer on the backend's device (or host memory) with its shape.
struct Act {
  Buffer<float> buf;
  int64_t ne0 = 0, ne1 = 0;
  Act(DeviceMemory* mem, int64_t a, int64_t b) : buf(static_cast<size_t>(a * b), mem), ne0(a), ne1(b) {}
  strata_tensor t() const { return tensor_f32(buf.data(), {ne0, ne1}); }
  // The same memory read as rows of `a` values.
  strata_tensor as(int64_t a, int64_t b) const { return tensor_f32(buf.data(), {a, b}); }
};

void upload(DeviceMemory* mem, void* dst, const void* src, uint64_t bytes) {
  if (mem != nullptr) {
    mem->upload(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// A column range [c0, c0 + n) of each row of a [ne0, ne1] f32 tensor, rows ne0 apart.
strata_tensor columns(const Act& a, int64_t c0, int64_t n) {
  strata_tensor t = tensor_f32(a.buf.data() + c0, {n, a.ne1});
  t.nb[1] = static_cast<uint64_t>(a.ne0) * sizeof(float);
  t.nb[2] = t.nb[1] * static_cast<uint64_t>(a.ne1);
  t.nb[3] = t.nb[2];
  return t;
}

// The encoder's op list; an absent bias adds nothing.
struct OpList {
  std::vector<strata_op> ops;

  void mul_mat(const strata_tensor& w, const strata_tensor& x, const strata_tensor& dst) {
    ops.push_back(ops::mul_mat(w, x, dst));
  }
  void add(const strata_tensor& a, const strata_tensor& b, const strata_tensor& dst) {
    if (b.data != nullptr) ops.push_back(ops::add(a, b, dst));
  }
  void layer_norm(const strata_tensor& x, const strata_tensor& w, const strata_tensor& b, float eps,
                  const strata_tensor& dst) {
    ops.push_back(ops::layer_norm(x, w, b, eps, dst));
  }
  void gelu(const strata_tensor& x, bool table) { ops.push_back(ops::gelu(x, table, x)); }
  void copy(const strata_tensor& src, const strata_tensor& dst) { ops.push_back(ops::copy(src, dst)); }
};

}  // namespace

std::optional<Embeddings> Projector::encode_on(Backend& backend, const ProjectorInput& input,
                                                const EncodeOptions& options) const {
  const ProjectorWeights& w = *weights_;
  const ProjectorInfo& info = w.info;
  if (!info.gelu) return std::nullopt;  // quick GELU: no op of its own (the CPU encoder has it)
  const detail::Grid grid = detail::make_grid(info, input);
  const auto n = static_cast<int64_t>(grid.patches()), n_tokens = n / 4;
  const int64_t width = info.width, k = int64_t{3} * info.patch_size * info.patch_size;
  if (!device_ || !device_->made_for(backend)) device_ = std::make_shared<DeviceProjector>(backend);
  DeviceProjector& dev = *device_;
  DeviceMemory* mem = dev.mem;

  // What goes up per image: the patch matrix, the position rows in sequence order, the rotary positions
  // (component-major [n, 4]: t, row, column, e) and the attention positions (every query at n - 1).
  const std::vector<float> patches = detail::patch_rows(input, grid, info.patch_size, options.f16_patch_input);
  const std::vector<float> table = detail::position_grid(w.pos_table, info.pos_side, info.width, grid.gw, grid.gh);
  std::vector<float> pos_rows(static_cast<size_t>(n * width));
  std::vector<int32_t> rope_pos(static_cast<size_t>(4 * n), 0), attn_pos(static_cast<size_t>(n), static_cast<int32_t>(n - 1));
  std::vector<int32_t> store_pos(options.f16_attention ? static_cast<size_t>(n) : 0);
  for (size_t s = 0; s < store_pos.size(); ++s) store_pos[s] = static_cast<int32_t>(s);
  for (int64_t s = 0; s < n; ++s) {
    const size_t src = (static_cast<size_t>(grid.row[static_cast<size_t>(s)]) * grid.gw +
                        static_cast<size_t>(grid.col[static_cast<size_t>(s)])) * info.width;
    std::copy_n(table.data() + src, width, pos_rows.data() + s * width);
    rope_pos[static_cast<size_t>(n + s)] = grid.row[static_cast<size_t>(s)];
    rope_pos[static_cast<size_t>(2 * n + s)] = grid.col[static_cast<size_t>(s)];
  }
  Act patch_in(mem, k, n), pos_in(mem, width, n);
  Buffer<int32_t> rope_in(rope_pos.size(), mem), attn_in(attn_pos.size(), mem);
  upload(mem, patch_in.buf.data(), patches.data(), patches.size() * sizeof(float));
  upload(mem, pos_in.buf.data(), pos_rows.data(), pos_rows.size() * sizeof(float));
  upload(mem, rope_in.data(), rope_pos.data(), rope_pos.size() * sizeof(int32_t));
  upload(mem, attn_in.data(), attn_pos.data(), attn_pos.size() * sizeof(int32_t));
  Buffer<int32_t> store_in(store_pos.size(), mem);
  Buffer<uint16_t> k16(store_pos.size() * static_cast<size_t>(info.width), mem),
      v16(store_pos.size() * static_cast<size_t>(info.width), mem);
  if (options.f16_attention) upload(mem, store_in.data(), store_pos.data(), store_pos.size() * sizeof(int32_t));

  // The patch kernels as the CPU encoder uses them (rounded to f16 with f16_patch_input), once per projector.
  if (kernels_[0].empty()) {
    for (int t = 0; t < 2; ++t) {
      kernels_[t] = w.patch_kernel[t];
      if (options.f16_patch_input) {
        for (float& v : kernels_[t]) v = detail::round_to_f16(v);
      }
    }
    kernels_rounded_ = options.f16_patch_input;
  } else if (kernels_rounded_ != options.f16_patch_input) {
    throw Error(info.file + ": a projector encodes on a backend with one f16_patch_input setting");
  }

  const int64_t ffn = info.ffn_width;
  Act h(mem, width, n), x(mem, width, n), qkv(mem, 3 * width, n), q(mem, width, n), kk(mem, width, n),
      v(mem, width, n), qr(mem, width, n), kr(mem, width, n), attn(mem, width, n), y(mem, width, n), up(mem, ffn, n),
      e1(mem, width, n);
  const int64_t part = info.out_width, n_parts = 1 + static_cast<int64_t>(info.deepstack_blocks.size());
  Act out(mem, part * n_parts, n_tokens);
  OpList list;
  // Patch embedding: ((e0 + e1) + bias) + positions, the CPU encoder's order.
  const strata_tensor k0 = tensor_f32(static_cast<const float*>(dev.place(kernels_[0].data(), kernels_[0].size() * 4)), {k, width});
  const strata_tensor k1 = tensor_f32(static_cast<const float*>(dev.place(kernels_[1].data(), kernels_[1].size() * 4)), {k, width});
  list.mul_mat(k0, patch_in.t(), h.t());
  list.mul_mat(k1, patch_in.t(), e1.t());
  list.add(h.t(), e1.t(), h.t());
  list.add(h.t(), dev.vector(w.patch_bias), h.t());
  list.add(h.t(), pos_in.t(), h.t());
  if (w.pre_ln) list.layer_norm(h.t(), dev.vector(w.pre_ln->w), dev.vector(w.pre_ln->b), info.eps, h.t());

  // A merger over h read as [4 width, n / 4] into part `p` of the output rows.
  const auto merge = [&](const Merger& m, int64_t p) {
    const int64_t in_width = m.fc1.w.cols, hidden = m.fc1.w.rows;
    strata_tensor src = h.as(in_width, n_tokens);
    Act normed(mem, in_width, n_tokens), mid(mem, hidden, n_tokens), res(mem, part, n_tokens);
    if (m.norm) {
      list.layer_norm(src, dev.vector(m.norm->w), dev.vector(m.norm->b), info.eps, normed.t());
      src = normed.t();
    }
    list.mul_mat(dev.matrix(m.fc1.w), src, mid.t());
    list.add(mid.t(), dev.vector(m.fc1.b), mid.t());
    list.gelu(mid.t(), options.f16_gelu_table);
    list.mul_mat(dev.matrix(m.fc2.w), mid.t(), res.t());
    list.add(res.t(), dev.vector(m.fc2.b), res.t());
    list.copy(res.t(), columns(out, p * part, part));
    return std::make_tuple(std::move(normed), std::move(mid), std::move(res));
  };
  std::vector<std::tuple<Act, Act, Act>> merger_buffers;

  const strata_tensor q_heads = tensor_f32(qr.buf.data(), {info.head_dim, info.n_head, n});
  const strata_tensor k_heads = tensor_f32(kr.buf.data(), {info.head_dim, info.n_head, n});
  for (uint32_t bi = 0; bi < info.n_block; ++bi) {
    const VisionBlock& b = w.blocks[bi];
    list.layer_norm(h.t(), dev.vector(b.ln1.w), dev.vector(b.ln1.b), info.eps, x.t());
    list.mul_mat(dev.matrix(b.qkv.w), x.t(), qkv.t());
    list.add(qkv.t(), dev.vector(b.qkv.b), qkv.t());
    list.copy(columns(qkv, 0, width), q.t());
    list.copy(columns(qkv, width, width), kk.t());
    list.copy(columns(qkv, 2 * width, width), v.t());
    for (int which = 0; which < 2; ++which) {
      strata_op rope = new_op(STRATA_OP_ROPE);
      rope.src[0] = tensor_f32((which == 0 ? q : kk).buf.data(), {info.head_dim, info.n_head, n});
      rope.src[1] = tensor_i32(rope_in.data(), {n, 4});
      rope.dst = which == 0 ? q_heads : k_heads;
      rope.i[0] = 24;
      rope.i[1] = static_cast<int32_t>(info.head_dim);
      rope.i[2] = static_cast<int32_t>(info.head_dim / 4);
      rope.i[3] = static_cast<int32_t>(info.head_dim / 4);
      rope.f[0] = 10000.0f;
      list.ops.push_back(rope);
    }
    strata_tensor keys = kr.t(), values = v.t();
    if (options.f16_attention) {
      keys = make_tensor(k16.data(), format::GgmlType::F16, {width, n});
      values = make_tensor(v16.data(), format::GgmlType::F16, {width, n});
      for (const auto& [cache, src] : {std::pair{keys, kr.t()}, std::pair{values, v.t()}}) {
        strata_op store = new_op(STRATA_OP_KV_STORE);
        store.dst = cache;
        store.src[0] = src;
        store.src[1] = tensor_i32(store_in.data(), {n});
        list.ops.push_back(store);
      }
    }
    strata_op att = new_op(STRATA_OP_ATTENTION);
    att.src[0] = q_heads;
    att.src[1] = keys;
    att.src[2] = values;
    att.src[3] = tensor_i32(attn_in.data(), {n});
    att.i[0] = static_cast<int32_t>(info.n_head);
    att.i[1] = static_cast<int32_t>(info.n_head);
    att.f[0] = 1.0f / std::sqrt(static_cast<float>(info.head_dim));
    att.dst = attn.t();
    list.ops.push_back(att);
    list.mul_mat(dev.matrix(b.out.w), attn.t(), y.t());
    list.add(y.t(), dev.vector(b.out.b), y.t());
    list.add(y.t(), h.t(), h.t());
    list.layer_norm(h.t(), dev.vector(b.ln2.w), dev.vector(b.ln2.b), info.eps, x.t());
    list.mul_mat(dev.matrix(b.up.w), x.t(), up.t());
    list.add(up.t(), dev.vector(b.up.b), up.t());
    list.gelu(up.t(), options.f16_gelu_table);
    list.mul_mat(dev.matrix(b.down.w), up.t(), y.t());
    list.add(y.t(), dev.vector(b.down.b), y.t());
    list.add(h.t(), y.t(), h.t());
    const auto marked = std::find(info.deepstack_blocks.begin(), info.deepstack_blocks.end(), bi);
    if (marked != info.deepstack_blocks.end()) {
      const auto m = static_cast<int64_t>(marked - info.deepstack_blocks.begin());
      merger_buffers.push_back(merge(w.deepstack[static_cast<size_t>(m)], 1 + m));
    }
  }
  if (w.post_ln) list.layer_norm(h.t(), dev.vector(w.post_ln->w), dev.vector(w.post_ln->b), info.eps, h.t());
  merger_buffers.push_back(merge(w.main, 0));

  // A GPU backend must run every op itself (its operands are in device memory); one on host memory hands what it
  // cannot run to the reference.
  if (mem != nullptr) {
    for (const strata_op& op : list.ops) {
      if (!backend.supports(op)) {
        log::info("vision: " + backend.name() + " does not run " + op_kind_name(op.kind) +
                  " as the encoder needs it; images are encoded on the CPU");
        return std::nullopt;
      }
    }
  }
  if (options.profile != nullptr) {
    compute_profiled(backend, list.ops, *options.profile);
  } else {
    backend.compute(list.ops);
  }

  Embeddings e;
  e.part_width = info.out_width;
  e.n_deepstack = static_cast<uint32_t>(info.deepstack_blocks.size());
  e.width = e.part_width * (1 + e.n_deepstack);
  e.nx = grid.gw / 2;
  e.ny = grid.gh / 2;
  e.n_pos = std::max(e.nx, e.ny);
  e.rows.resize(static_cast<size_t>(out.ne0 * out.ne1));
  if (mem != nullptr) {
    mem->download(e.rows.data(), out.buf.data(), e.rows.size() * sizeof(float));
  } else {
    std::copy_n(out.buf.data(), e.rows.size(), e.rows.data());
  }
  return e;
}

}  // namespace strata::vision
