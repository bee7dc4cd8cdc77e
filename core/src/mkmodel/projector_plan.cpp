// The vision projector of a Qwen3-VL spec: an mmproj GGUF with the keys, tensor names, shapes and types of
// llama.cpp's converter (conversion/qwen3vl.py's Qwen3VLVisionModel over the MmprojModel base, default --outtype
// f16), which vision::Projector::load reads (core/src/vision/projector_file.cpp).
#include <cmath>
#include <string>

#include "model_plan.hpp"
#include "strata/error.hpp"

namespace strata::mkmodel {
namespace {

Error projector_error(const std::string& what) { return Error("mkmodel: projector: " + what); }

void check_projector_size(uint32_t v, const char* what) {
  if (v == 0) throw projector_error(std::string(what) + " must be at least 1");
}

std::string projector_default_name(const ModelSpec& s) {
  const ProjectorSpec& p = *s.projector;
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about `" " + std::to_string(...)`.
  std::string name = "strata mkmodel mmproj qwen3vl_merger ";
  name += std::to_string(p.n_block);
  name += "L ";
  name += std::to_string(p.width);
  name += "d ";
  name += s.quant == QuantPreset::F32 ? "f32" : "f16";
  return name;
}

// The keys in the converter's order: MmprojModel's, then Qwen3VLVisionModel's.
void set_projector_keys(const ModelSpec& s, gguf::Writer& w) {
  const ProjectorSpec& p = *s.projector;
  w.set_string("general.architecture", "clip");
  w.set_string("general.type", "mmproj");
  w.set_string("general.name", s.name.empty() ? projector_default_name(s) : s.name + " mmproj");
  w.set_u32("general.file_type", s.quant == QuantPreset::F32 ? 0 : 1);  // llama_ftype ALL_F32, MOSTLY_F16
  w.set_bool("clip.has_vision_encoder", true);
  w.set_u32("clip.vision.projection_dim", s.n_embd);
  w.set_u32("clip.vision.image_size", p.pos_side * p.patch_size);  // sqrt(num_position_embeddings) x patch
  w.set_u32("clip.vision.patch_size", p.patch_size);
  w.set_u32("clip.vision.embedding_length", p.width);
  w.set_u32("clip.vision.feed_forward_length", p.ffn_width);
  w.set_u32("clip.vision.block_count", p.n_block);
  w.set_u32("clip.vision.attention.head_count", p.n_head);
  const float half[3] = {0.5f, 0.5f, 0.5f};  // Qwen3-VL's image_mean and image_std
  w.set_array("clip.vision.image_mean", std::span<const float>(half));
  w.set_array("clip.vision.image_std", std::span<const float>(half));
  w.set_string("clip.projector_type", "qwen3vl_merger");
  w.set_bool("clip.use_gelu", true);
  w.set_u32("clip.vision.spatial_merge_size", 2);
  w.set_f32("clip.vision.attention.layer_norm_epsilon", p.eps);
  gguf::ArrayBuilder deepstack(gguf::ValueType::Bool);
  size_t next = 0;
  for (uint32_t b = 0; b < p.n_block; ++b) {
    const bool here = next < p.deepstack_blocks.size() && p.deepstack_blocks[next] == b;
    if (here) ++next;
    deepstack.add_bool(here);
  }
  w.set_array("clip.vision.is_deepstack_layers", deepstack);
  w.set_u64("strata.mkmodel.seed", s.seed);
}

class TensorList {
 public:
  TensorList(gguf::Writer& w, std::vector<TensorFill>& fills, ProjectorPlan& plan, format::GgmlType matrix_type)
      : w_(w), fills_(fills), plan_(plan), matrix_type_(matrix_type) {}

  // A weight applied to `fan_in` inputs: unit gain (rms 1/sqrt(fan_in)), F16 unless the file is all F32.
  void matrix(const std::string& name, std::vector<uint64_t> ne, uint64_t fan_in) {
    add(name, matrix_type_, std::move(ne), TensorFill::Kind::Random,
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in))));
  }
  // A LayerNorm: weight 1, bias small.
  void norm(const std::string& prefix, uint64_t width) {
    add(prefix + ".weight", format::GgmlType::F32, {width}, TensorFill::Kind::Ones, 0.0f);
    bias(prefix + ".bias", width);
  }
  void bias(const std::string& name, uint64_t width) {
    add(name, format::GgmlType::F32, {width}, TensorFill::Kind::Random, 0.02f);
  }
  void linear(const std::string& prefix, uint64_t in, uint64_t out) {
    matrix(prefix + ".weight", {in, out}, in);
    bias(prefix + ".bias", out);
  }
  void add(const std::string& name, format::GgmlType type, std::vector<uint64_t> ne, TensorFill::Kind kind,
           float rms) {
    const size_t index = w_.add_tensor(name, type, ne);
    plan_.tensors.push_back({name, type, ne, w_.tensor_bytes(index)});
    TensorFill f;
    f.kind = kind;
    f.rms = rms;
    fills_.push_back(f);
  }

 private:
  gguf::Writer& w_;
  std::vector<TensorFill>& fills_;
  ProjectorPlan& plan_;
  format::GgmlType matrix_type_;
};

}  // namespace

void check_projector(const ModelSpec& s) {
  if (!s.projector) throw projector_error("the spec has none (a qwen3vlmoe shape brings one: --shape qwen3-vl-30b-a3b or tiny)");
  if (s.arch != Arch::Qwen3VlMoe) {
    throw projector_error("a vision projector goes with a qwen3vlmoe model, not " + std::string(arch_name(s.arch)));
  }
  const ProjectorSpec& p = *s.projector;
  check_projector_size(p.n_block, "block count");
  check_projector_size(p.width, "width");
  check_projector_size(p.ffn_width, "feed-forward width");
  check_projector_size(p.n_head, "head count");
  check_projector_size(p.patch_size, "patch size");
  check_projector_size(p.pos_side, "position grid side");
  check_projector_size(s.n_embd, "the output width (the text model's --embd)");
  if (p.width % p.n_head != 0 || (p.width / p.n_head) % 4 != 0) {
    throw projector_error("width " + std::to_string(p.width) + " over " + std::to_string(p.n_head) +
              " heads must give a head size that is a multiple of 4 (the 2-D RoPE's row and column halves)");
  }
  if (!(p.eps >= 0.0f) || !std::isfinite(p.eps)) throw projector_error("LayerNorm epsilon must be finite and >= 0");
  for (size_t i = 0; i < p.deepstack_blocks.size(); ++i) {
    const uint32_t b = p.deepstack_blocks[i];
    if (b >= p.n_block || (i > 0 && b <= p.deepstack_blocks[i - 1])) {
      throw projector_error("deepstack blocks must ascend and lie below the block count " + std::to_string(p.n_block));
    }
  }
  if (p.deepstack_blocks.size() != s.n_deepstack) {
    throw projector_error(std::to_string(p.deepstack_blocks.size()) + " deepstack mergers, but the text model takes " +
              std::to_string(s.n_deepstack) + " deepstack parts (n_deepstack_layers): an image row must be as wide "
              "as the model's input, n_embd x (1 + deepstack)");
  }
}

ProjectorPlan build_projector(const ModelSpec& spec, gguf::Writer& w, std::vector<TensorFill>& fills) {
  check_projector(spec);
  set_projector_keys(spec, w);
  const ProjectorSpec& p = *spec.projector;
  ProjectorPlan plan;
  fills.clear();
  TensorList t(w, fills, plan, spec.quant == QuantPreset::F32 ? format::GgmlType::F32 : format::GgmlType::F16);
  const uint64_t width = p.width, patch = p.patch_size, merged = 4 * width, out = spec.n_embd;
  // The Conv3d's two temporal slices, summed over a still image's two equal frames: 2 x 3 x patch² inputs.
  for (const char* kernel : {"v.patch_embd.weight", "v.patch_embd.weight.1"}) {
    t.matrix(kernel, {patch, patch, 3, width}, 2 * 3 * patch * patch);
  }
  t.bias("v.patch_embd.bias", width);
  // llama.cpp keeps the position table F32; rms 0.5 beside patch embeddings of about that size.
  t.add("v.position_embd.weight", format::GgmlType::F32, {width, uint64_t{p.pos_side} * p.pos_side},
        TensorFill::Kind::Random, 0.5f);
  for (uint32_t b = 0; b < p.n_block; ++b) {
    const std::string blk = "v.blk." + std::to_string(b) + ".";
    t.norm(blk + "ln1", width);
    t.linear(blk + "attn_qkv", width, 3 * width);
    t.linear(blk + "attn_out", width, width);
    t.norm(blk + "ln2", width);
    t.linear(blk + "ffn_up", width, p.ffn_width);
    t.linear(blk + "ffn_down", p.ffn_width, width);
  }
  for (uint32_t b : p.deepstack_blocks) {
    const std::string ds = "v.deepstack." + std::to_string(b) + ".";
    t.norm(ds + "norm", merged);
    t.linear(ds + "fc1", merged, merged);
    t.linear(ds + "fc2", merged, out);
  }
  t.norm("v.post_ln", width);
  t.linear("mm.0", merged, merged);
  t.linear("mm.2", merged, out);
  plan.file_bytes = w.file_size();
  return plan;
}

ProjectorPlan plan_projector(const ModelSpec& spec) {
  gguf::Writer w;
  std::vector<TensorFill> fills;
  return build_projector(spec, w, fills);
}

}  // namespace strata::mkmodel
