// image_writers.hpp: libpng's and libjpeg's encoders writing to memory.
#include "image_writers.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>

#include <stdexcept>

namespace strata::test {
namespace {

void on_png_write(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
void on_png_flush(png_structp) {}

// libpng reports failure by longjmp to here, so this frame holds no objects with destructors.
bool png_encode(png_structp png, png_infop info, uint32_t w, uint32_t h, int depth, int color_type, bool interlaced,
                const png_color* palette, int n_palette, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, w, h, depth, color_type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (palette != nullptr) png_set_PLTE(png, info, palette, n_palette);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

}  // namespace

std::vector<uint8_t> make_png(uint32_t w, uint32_t h, int depth, int color_type, const std::vector<uint8_t>& samples,
                              const std::vector<PaletteColor>& palette, bool interlaced) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> data = samples;
  std::vector<png_color> colors;
  for (const PaletteColor& c : palette) colors.push_back({c.red, c.green, c.blue});
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, on_png_write, on_png_flush);
  const size_t row_bytes = data.size() / h;
  std::vector<png_bytep> rows(h);
  for (uint32_t y = 0; y < h; ++y) rows[y] = data.data() + y * row_bytes;
  const bool ok = png_encode(png, info, w, h, depth, color_type, interlaced, colors.empty() ? nullptr : colors.data(),
                             static_cast<int>(colors.size()), rows.data());
  png_destroy_write_struct(&png, &info);
  if (!ok) throw std::runtime_error("libpng refused to write the test PNG");
  return out;
}

std::vector<uint8_t> make_jpeg(const vision::Image& image, int quality, bool progressive, JpegColors colors) {
  const int channels = colors == JpegColors::Grey ? 1 : colors == JpegColors::Cmyk ? 4 : 3;
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = image.width;
  cinfo.image_height = image.height;
  cinfo.input_components = channels;
  cinfo.in_color_space = colors == JpegColors::Grey ? JCS_GRAYSCALE : colors == JpegColors::Cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(image.width) * static_cast<size_t>(channels));
  while (cinfo.next_scanline < cinfo.image_height) {
    const uint8_t* src = image.rgb.data() + static_cast<size_t>(cinfo.next_scanline) * image.width * 3;
    for (uint32_t x = 0; x < image.width; ++x) {
      for (int c = 0; c < channels; ++c) row[channels * x + c] = c < 3 ? src[3 * x + c] : uint8_t{100};
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> out(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

}  // namespace strata::test
