// Opens a Qwen3-VL projector GGUF ("mmproj", general.architecture "clip", clip.projector_type "qwen3vl_merger")
// and checks what llama.cpp's loader requires: the keys, every tensor with its shape, a decodable type. A block has
// a deepstack merger exactly when v.deepstack.N.fc1.weight exists (clip.vision.is_deepstack_layers is not read,
// as in llama.cpp).
#include <cmath>
#include <string>

#include "projector_weights.hpp"
#include "strata/format/dequantize.hpp"

namespace strata::vision {
namespace {

using format::GgmlType;

class Loader {
 public:
  explicit Loader(const gguf::File& file) : file_(file), md_(file.metadata()) {}

  [[noreturn]] void fail(const std::string& problem) const { throw Error(file_.name() + ": " + problem); }

  uint32_t u32(const std::string& key) const {
    const uint32_t v = md_.get_u32(key);
    if (v == 0) fail(key + " is 0");
    return v;
  }

  const gguf::TensorView* find(const std::string& name) const { return file_.find_tensor(name); }

  const gguf::TensorView& tensor(const std::string& name, std::initializer_list<uint64_t> shape) const {
    const gguf::TensorView* t = find(name);
    if (t == nullptr) fail("tensor '" + name + "' is missing (a qwen3vl_merger projector needs it)");
    bool same = t->n_dims == shape.size();
    size_t i = 0;
    for (uint64_t d : shape) same = same && t->ne[i++] == d;
    if (!same) fail("tensor '" + name + "' has shape " + describe(t->shape()) + ", expected " + describe(shape));
    if (!format::has_dequantize(t->type)) {
      fail("tensor '" + name + "' is of type " + std::string(format::traits(t->type).name) +
           ", which has no float decoding");
    }
    if (t->ne[0] % format::traits(t->type).block_elems != 0) {
      fail("tensor '" + name + "': rows of " + std::to_string(t->ne[0]) + " values are not whole " +
           std::string(format::traits(t->type).name) + " blocks");
    }
    return *t;
  }

  std::vector<float> floats(const std::string& name, std::initializer_list<uint64_t> shape) const {
    const gguf::TensorView& t = tensor(name, shape);
    std::vector<float> out(t.n_elements);
    format::dequantize_row(t.type, t.data, out.data(), static_cast<int64_t>(t.n_elements));
    return out;
  }

  Matrix matrix(const std::string& name, uint64_t cols, uint64_t rows) const {
    const gguf::TensorView& t = tensor(name, {cols, rows});
    return Matrix{t.type, t.data, static_cast<uint32_t>(rows), static_cast<uint32_t>(cols),
                  format::row_bytes(t.type, cols)};
  }

  Linear linear(const std::string& prefix, uint64_t in, uint64_t out) const {
    return Linear{matrix(prefix + ".weight", in, out), floats(prefix + ".bias", {out})};
  }

  Norm norm(const std::string& prefix, uint64_t width) const {
    return Norm{floats(prefix + ".weight", {width}), floats(prefix + ".bias", {width})};
  }

  std::optional<Norm> optional_norm(const std::string& prefix, uint64_t width) const {
    if (find(prefix + ".weight") == nullptr) return std::nullopt;
    return norm(prefix, width);
  }

  static std::string describe(std::span<const uint64_t> shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
  static std::string describe(std::initializer_list<uint64_t> shape) {
    return describe(std::span<const uint64_t>(shape.begin(), shape.size()));
  }

 private:
  const gguf::File& file_;
  const gguf::Metadata& md_;
};

void read_info(const Loader& in, const gguf::Metadata& md, ProjectorInfo& info) {
  const std::string_view arch = md.get_string("general.architecture");
  if (arch != "clip") {
    in.fail("general.architecture is \"" + std::string(arch) + "\": not a projector (mmproj) file, which says \"clip\"");
  }
  const std::string_view type = md.get_string("clip.projector_type");
  if (type != "qwen3vl_merger") {
    in.fail("clip.projector_type is \"" + std::string(type) +
            "\": this build reads only qwen3vl_merger projectors (Qwen3-VL)");
  }
  if (!md.get_bool("clip.has_vision_encoder")) in.fail("clip.has_vision_encoder is false: no vision encoder");
  info.width = in.u32("clip.vision.embedding_length");
  info.n_head = in.u32("clip.vision.attention.head_count");
  info.ffn_width = in.u32("clip.vision.feed_forward_length");
  info.n_block = in.u32("clip.vision.block_count");
  info.out_width = in.u32("clip.vision.projection_dim");
  info.patch_size = in.u32("clip.vision.patch_size");
  in.u32("clip.vision.image_size");  // required by llama.cpp; this projector's preprocessing does not use it
  info.eps = md.get_f32("clip.vision.attention.layer_norm_epsilon");
  if (!(info.eps >= 0.0f) || !std::isfinite(info.eps)) in.fail("clip.vision.attention.layer_norm_epsilon is not a finite value >= 0");
  info.gelu = md.find_bool("clip.use_gelu").value_or(false);
  info.merge = md.find_u32("clip.vision.spatial_merge_size").value_or(2);
  if (info.merge != 2) {
    in.fail("clip.vision.spatial_merge_size is " + std::to_string(info.merge) + ": qwen3vl_merger merges 2x2 patches");
  }
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    const std::vector<float> v = md.get_f32_array(key);
    if (v.size() != 3) in.fail(std::string(key) + " has " + std::to_string(v.size()) + " values, expected 3 (R, G, B)");
    float* dst = std::string_view(key).ends_with("mean") ? info.mean : info.std;
    for (int c = 0; c < 3; ++c) dst[c] = v[static_cast<size_t>(c)];
  }
  for (float s : info.std) {
    if (!(s != 0.0f) || !std::isfinite(s)) in.fail("clip.vision.image_std holds 0 or a non-finite value");
  }
  if (info.width % info.n_head != 0) {
    in.fail("clip.vision.embedding_length " + std::to_string(info.width) + " is not a multiple of the " +
            std::to_string(info.n_head) + " heads");
  }
  info.head_dim = info.width / info.n_head;
  if (info.head_dim % 4 != 0) {
    in.fail("head size " + std::to_string(info.head_dim) + " is not a multiple of 4 (the 2-D RoPE's row and column halves)");
  }
}

}  // namespace

Projector::Projector() = default;
Projector::Projector(Projector&&) noexcept = default;
Projector& Projector::operator=(Projector&&) noexcept = default;
Projector::~Projector() = default;

Projector Projector::load(const std::string& path) {
  auto w = std::make_unique<ProjectorWeights>(gguf::File::open(path));
  const Loader in(w->file);
  ProjectorInfo& info = w->info;
  info.file = path;
  read_info(in, w->file.metadata(), info);

  const uint64_t width = info.width, p = info.patch_size, merged = uint64_t{info.width} * info.merge * info.merge;
  w->patch_kernel[0] = in.floats("v.patch_embd.weight", {p, p, 3, width});
  w->patch_kernel[1] = in.floats("v.patch_embd.weight.1", {p, p, 3, width});
  w->patch_bias = in.floats("v.patch_embd.bias", {width});
  if (in.find("v.class_embd") != nullptr) in.fail("tensor 'v.class_embd' is present: qwen3vl_merger has no class embedding");
  const gguf::TensorView* pos = in.find("v.position_embd.weight");
  if (pos == nullptr) in.fail("tensor 'v.position_embd.weight' is missing (a qwen3vl_merger projector needs it)");
  const auto side = static_cast<uint64_t>(std::llround(std::sqrt(static_cast<double>(pos->ne[1]))));
  if (side * side != pos->ne[1]) {
    in.fail("tensor 'v.position_embd.weight' has " + std::to_string(pos->ne[1]) + " positions, not a square grid");
  }
  info.pos_side = static_cast<uint32_t>(side);
  w->pos_table = in.floats("v.position_embd.weight", {width, side * side});
  w->pre_ln = in.optional_norm("v.pre_ln", width);

  for (uint32_t b = 0; b < info.n_block; ++b) {
    const std::string blk = "v.blk." + std::to_string(b) + ".";
    w->blocks.push_back(VisionBlock{in.norm(blk + "ln1", width), in.linear(blk + "attn_qkv", width, 3 * width),
                                    in.linear(blk + "attn_out", width, width), in.norm(blk + "ln2", width),
                                    in.linear(blk + "ffn_up", width, info.ffn_width),
                                    in.linear(blk + "ffn_down", info.ffn_width, width)});
    const std::string ds = "v.deepstack." + std::to_string(b) + ".";
    if (const gguf::TensorView* fc1 = in.find(ds + "fc1.weight")) {
      const uint64_t hidden = fc1->n_dims == 2 ? fc1->ne[1] : 0;
      info.deepstack_blocks.push_back(b);
      w->deepstack.push_back(Merger{in.norm(ds + "norm", merged), in.linear(ds + "fc1", merged, hidden),
                                    in.linear(ds + "fc2", hidden, info.out_width)});
    }
  }
  w->post_ln = in.optional_norm("v.post_ln", width);
  const gguf::TensorView* mm0 = in.find("mm.0.weight");
  const uint64_t hidden = mm0 != nullptr && mm0->n_dims == 2 ? mm0->ne[1] : merged;
  w->main = Merger{std::nullopt, in.linear("mm.0", merged, hidden), in.linear("mm.2", hidden, info.out_width)};

  Projector projector;
  projector.weights_ = std::move(w);
  return projector;
}

const ProjectorInfo& Projector::info() const { return weights_->info; }

uint32_t Projector::row_width() const {
  return weights_->info.out_width * (1 + static_cast<uint32_t>(weights_->deepstack.size()));
}

ResizeLimits Projector::resize_limits() const {
  ResizeLimits limits;
  const uint32_t align = weights_->info.patch_size * weights_->info.merge;
  limits.align = align;
  limits.min_pixels = 8 * align * align;
  limits.max_pixels = 4096 * align * align;
  return limits;
}

}  // namespace strata::vision
