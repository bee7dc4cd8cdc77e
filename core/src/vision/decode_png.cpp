// PNG through libpng, converted to 8-bit RGB: palettes expanded, grey copied to R, G and B, 16-bit samples cut to
// their high byte, alpha dropped (as stb_image, which llama.cpp reads images with, does for 3 channels).
// libpng reports errors by longjmp: the functions that call setjmp hold only trivially destructible objects,
// and every C++ object (the pixels, the row pointers, the guard that frees libpng's structs) lives in their caller.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "image_decoders.hpp"

namespace strata::vision::detail {
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

struct PngErrors {
  char message[256];
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* errors = static_cast<PngErrors*>(png_get_error_ptr(png));
  std::snprintf(errors->message, sizeof errors->message, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void on_png_read(png_structp png, png_bytep out, size_t n) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->size - source->pos < n) png_error(png, "truncated file: the data ends before the image does");
  std::memcpy(out, source->data + source->pos, n);
  source->pos += n;
}

struct PngHeader {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  int color_type;
  size_t row_bytes;
  int channels;
};

// Reads the header and sets the conversions to 8-bit RGB; false when libpng failed (the message is in its
// error struct).
bool read_png_header(png_structp png, png_infop info, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int interlace = 0;
  png_get_IHDR(png, info, &header->width, &header->height, &header->bit_depth, &header->color_type, &interlace,
               nullptr, nullptr);
  if (header->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (header->color_type == PNG_COLOR_TYPE_GRAY && header->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (header->bit_depth == 16) png_set_strip_16(png);
  if ((header->color_type & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
  if ((header->color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  header->row_bytes = png_get_rowbytes(png, info);
  header->channels = png_get_channels(png, info);
  return true;
}

// Reads every row (all interlace passes) and the chunks after the image.
bool read_png_rows(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

class PngReadGuard {
 public:
  PngReadGuard(png_structp png, png_infop info) : png_(png), info_(info) {}
  PngReadGuard(const PngReadGuard&) = delete;
  PngReadGuard& operator=(const PngReadGuard&) = delete;
  ~PngReadGuard() { png_destroy_read_struct(&png_, info_ != nullptr ? &info_ : nullptr, nullptr); }

 private:
  png_structp png_;
  png_infop info_;
};

}  // namespace

Image decode_png(std::span<const uint8_t> bytes, std::string_view what) {
  PngErrors errors{};
  PngSource source{bytes.data(), bytes.size(), 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &errors, on_png_error, on_png_warning);
  if (png == nullptr) refuse(what, "libpng could not start (out of memory?)");
  png_infop info = png_create_info_struct(png);
  PngReadGuard guard(png, info);
  if (info == nullptr) refuse(what, "libpng could not start (out of memory?)");
  png_set_read_fn(png, &source, on_png_read);

  PngHeader header{};
  if (!read_png_header(png, info, &header)) refuse(what, std::string("bad PNG: ") + errors.message);
  check_dimensions(what, "PNG", header.width, header.height, bytes.size());
  if (header.channels != 3 || header.row_bytes != static_cast<size_t>(header.width) * 3) {
    refuse(what, "PNG of colour type " + std::to_string(header.color_type) + " and bit depth " +
                     std::to_string(header.bit_depth) + " did not convert to 8-bit RGB");
  }

  Image image;
  image.width = header.width;
  image.height = header.height;
  image.rgb.resize(static_cast<size_t>(header.width) * header.height * 3);
  std::vector<png_bytep> rows(header.height);
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = image.rgb.data() + y * header.row_bytes;
  if (!read_png_rows(png, rows.data())) refuse(what, std::string("bad PNG: ") + errors.message);
  return image;
}

}  // namespace strata::vision::detail
