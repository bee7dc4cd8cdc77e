// Images for vision-language models: decoding (PPM, PNG, JPEG), a Qwen3-VL vision projector file (an "mmproj"
// GGUF, `clip.projector_type` = "qwen3vl_merger") and its encoder on the CPU, which turns an image into rows of
// input embeddings for the text model, computed as llama.cpp's libmtmd computes them.
//
//   vision::Projector projector = vision::Projector::load("mmproj.gguf");
//   vision::Image image = vision::load_image("photo.jpg");         // or decode_image(bytes, "data URL")
//   vision::Embeddings e = projector.encode(image);
//   // e.n_tokens() rows of e.width floats: [main | deepstack 0 | deepstack 1 | ...], raster order over the
//   // e.nx × e.ny grid of merged patches; the text positions advance by e.n_pos = max(nx, ny).
//
// Every bad input (a file, its bytes, the projector's keys and tensors) is refused with a strata::Error naming the
// file and the problem. The arithmetic is plain float in fixed orders: the same image gives the same bytes on any
// thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"

namespace strata {
class Backend;
class OpProfile;
}

namespace strata::vision {

// 8-bit RGB pixels, rows top to bottom, pixels left to right, bytes R G B (3·width·height bytes).
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> rgb;
};

// Decodes a PPM (binary P6, maxval 255), PNG or JPEG held in memory; the format is found by its magic bytes.
// Palette, grey, 16-bit and alpha PNGs become 8-bit RGB (alpha dropped); grey JPEGs become RGB, CMYK ones are
// refused. `what` names the bytes in messages (a path, "data URL"): "<what>: <problem>".
Image decode_image(std::span<const uint8_t> bytes, std::string_view what);
// Reads a file and decodes it as decode_image does.
Image load_image(const std::string& path);

// Whether `text` is a data URL ("data:...", any case).
bool is_data_url(std::string_view text);
// The bytes of a data URL, "data:[<media type>][;base64],<data>" (RFC 2397): base64 (standard or URL-safe
// alphabet, whitespace skipped) or percent-encoded data. An http(s) URL is refused (nothing is fetched), as is
// anything else that is not a data URL; the messages start with `what` (a request field, a file).
std::vector<uint8_t> decode_data_url(std::string_view url, std::string_view what);
// An image given as a file path or a data URL: its bytes as sent (what the server's prefix reuse keys an image on)
// and the decoded picture.
struct ImageSource {
  std::vector<uint8_t> bytes;
  Image image;
};
ImageSource read_image_source(const std::string& file_or_data_url, std::string_view what);

// Qwen's "smart resize": the size a projector's input is resized to, both sides multiples of `align`, its area
// within [min_pixels, max_pixels] when possible, computed in float32 as llama.cpp does.
struct ResizeLimits {
  uint32_t align = 32;                  // patch size × spatial merge
  uint32_t min_pixels = 8 * 32 * 32;    // llama.cpp's built-in limits for qwen3vl_merger: 8 and 4096 image tokens
  uint32_t max_pixels = 4096 * 32 * 32;
};
struct Size {
  uint32_t width = 0;
  uint32_t height = 0;
  bool operator==(const Size&) const = default;
};
Size smart_resize_target(Size input, const ResizeLimits& limits);

// Resizes `image` to `target` keeping its aspect ratio: a bilinear uint8 → uint8 resize (float32, corner
// aligned, values truncated) of the picture to fit, centred on a black canvas of the target size. An image
// already of the target size is returned unchanged.
Image resize_padded(const Image& image, Size target);

// (byte/255 − mean[c])/std[c] in float32, as three planes (R, G, B) of width·height values each.
std::vector<float> normalize(const Image& image, const float (&mean)[3], const float (&std)[3]);

// The projector's hyperparameters, as read from the file.
struct ProjectorInfo {
  std::string file;
  uint32_t width = 0;          // vision embedding length (clip.vision.embedding_length)
  uint32_t n_head = 0;
  uint32_t head_dim = 0;
  uint32_t ffn_width = 0;
  uint32_t n_block = 0;
  uint32_t patch_size = 0;
  uint32_t merge = 0;          // spatial merge (2: 2×2 patches per token)
  uint32_t pos_side = 0;       // the learned position table's grid is pos_side × pos_side
  uint32_t out_width = 0;      // projection_dim: width of each part of an output row
  float eps = 0.0f;            // LayerNorm epsilon
  bool gelu = true;            // the vision blocks' activation: GELU (tanh form), else quick GELU
  float mean[3] = {0, 0, 0};
  float std[3] = {1, 1, 1};
  std::vector<uint32_t> deepstack_blocks;  // the blocks followed by a deepstack merger, ascending
};

// The image rows for the text model.
struct Embeddings {
  std::vector<float> rows;    // n_tokens() × width floats, token-major
  uint32_t width = 0;         // out_width · (1 + n_deepstack): [main | deepstack 0 | deepstack 1 | ...]
  uint32_t part_width = 0;    // out_width
  uint32_t n_deepstack = 0;
  uint32_t nx = 0;            // merged-token grid: nx wide, ny high, tokens in raster order
  uint32_t ny = 0;
  uint32_t n_pos = 0;         // how far the text positions advance over the image: max(nx, ny)

  size_t n_tokens() const { return static_cast<size_t>(nx) * ny; }
  std::span<const float> row(size_t token) const {
    return std::span<const float>(rows).subspan(token * width, width);
  }
};

// How encode computes. The defaults reproduce llama.cpp's CPU arithmetic where it leaves float32: the patch
// embedding's inputs rounded to float16 (its F16 im2col) and GELU read from a float16 table.
struct EncodeOptions {
  bool f16_patch_input = true;   // round the normalized pixels and the patch kernels to float16 before products
  bool f16_gelu_table = true;    // gelu(x) = f16(gelu(f16(x))) for −10 < x < 10, 0 below, x above
  unsigned threads = 0;          // 0: the machine's hardware threads
  OpProfile* profile = nullptr;  // encode_on: each op's time added here (strata run --profile-image)
  // encode_on: the blocks' keys and values stored as float16 before ATTENTION, as llama.cpp's default flash attention
  // casts them (its CUDA build's default; its CPU reference data has it off). On a GPU that takes the tensor-core
  // attention kernels instead of the portable f32 one; the embeddings move by about llama.cpp's own FA-on shift.
  // The engine sets it for backends with device memory (engine/prompt_images.cpp).
  bool f16_attention = false;
};

// The projector's input: the resized and normalized image, with the grid it gives.
struct ProjectorInput {
  Size size;                   // resized size (multiples of patch_size · merge)
  std::vector<float> planes;   // normalize()'s R, G, B planes
};

struct ProjectorWeights;
struct DeviceProjector;

// A Qwen3-VL projector file, mapped; its weights are views of the mapping.
class Projector {
 public:
  // Opens and checks the file: clip.projector_type "qwen3vl_merger", the keys llama.cpp requires, every tensor
  // with its shape and a decodable type. Anything else is a strata::Error naming the file and the key or tensor.
  static Projector load(const std::string& path);

  Projector(Projector&&) noexcept;
  Projector& operator=(Projector&&) noexcept;
  ~Projector();

  const ProjectorInfo& info() const;
  // Width of an output row: out_width · (1 + deepstack mergers).
  uint32_t row_width() const;
  ResizeLimits resize_limits() const;

  // Smart resize, resize_padded and normalize with the file's mean and std.
  ProjectorInput preprocess(const Image& image) const;
  Embeddings encode(const Image& image, const EncodeOptions& options = {}) const;
  Embeddings encode(const ProjectorInput& input, const EncodeOptions& options = {}) const;
  // The encoder as ops on `backend` (backend 1.7's LAYER_NORM, GELU and ROPE mode 24 with MUL_MAT, ADD, COPY and
  // ATTENTION): on a GPU backend the whole encoder runs on its device, the weights uploaded on the first call and
  // kept while the projector lives. nullopt when the backend cannot run one of the ops (a GPU plugin below 1.7)
  // or the projector uses quick GELU: then encode() (the CPU) is the way. Not thread-safe: the caller owns the
  // backend for the call (the engine's thread).
  std::optional<Embeddings> encode_on(Backend& backend, const ProjectorInput& input,
                                      const EncodeOptions& options = {}) const;

 private:
  Projector();
  std::unique_ptr<ProjectorWeights> weights_;
  mutable std::shared_ptr<DeviceProjector> device_;  // the weights where encode_on's backend addresses them
  mutable std::vector<float> kernels_[2];             // the patch kernels as encode_on multiplies them
  mutable bool kernels_rounded_ = false;
};

}  // namespace strata::vision
