// JPEG through libjpeg(-turbo), as 8-bit RGB (grey expanded); CMYK and YCCK files are refused. libjpeg reports
// errors through its error manager, which here leaves by longjmp: the functions that call setjmp hold only
// trivially destructible objects, and the pixels live in their caller. Corrupt-data warnings (a truncated file
// among them, which libjpeg would otherwise finish in grey) are errors too, except extraneous bytes between markers.
#include <csetjmp>
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <vector>

#include "image_decoders.hpp"

namespace strata::vision::detail {
namespace {

struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg's pointer to the manager is a pointer to this struct
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  if (cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
  on_jpeg_error(cinfo);
}

struct JpegHeader {
  JDIMENSION width;
  JDIMENSION height;
  int components;
  J_COLOR_SPACE color_space;
  bool cmyk;
};

// Reads the header and starts decompressing to RGB; false on a libjpeg error or a CMYK/YCCK file (cmyk set).
bool start_jpeg(jpeg_decompress_struct* cinfo, JpegErrors* errors, const uint8_t* data, size_t size,
                JpegHeader* header) {
  if (setjmp(errors->jump)) return false;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  header->color_space = cinfo->jpeg_color_space;
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    header->cmyk = true;
    return false;
  }
  cinfo->out_color_space = JCS_RGB;
  jpeg_calc_output_dimensions(cinfo);
  header->width = cinfo->output_width;
  header->height = cinfo->output_height;
  header->components = cinfo->output_components;
  return true;
}

// Decompresses every scanline into `pixels` (3·width bytes a row) and finishes.
bool read_jpeg_rows(jpeg_decompress_struct* cinfo, JpegErrors* errors, uint8_t* pixels, size_t row_bytes) {
  if (setjmp(errors->jump)) return false;
  jpeg_start_decompress(cinfo);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = pixels + static_cast<size_t>(cinfo->output_scanline) * row_bytes;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

class JpegGuard {
 public:
  explicit JpegGuard(jpeg_decompress_struct* cinfo) : cinfo_(cinfo) {}
  JpegGuard(const JpegGuard&) = delete;
  JpegGuard& operator=(const JpegGuard&) = delete;
  ~JpegGuard() { jpeg_destroy_decompress(cinfo_); }

 private:
  jpeg_decompress_struct* cinfo_;
};

}  // namespace

Image decode_jpeg(std::span<const uint8_t> bytes, std::string_view what) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = on_jpeg_error;
  errors.manager.emit_message = on_jpeg_message;
  jpeg_create_decompress(&cinfo);
  JpegGuard guard(&cinfo);

  JpegHeader header{};
  if (!start_jpeg(&cinfo, &errors, bytes.data(), bytes.size(), &header)) {
    if (header.cmyk) refuse(what, "CMYK JPEG: only RGB and greyscale JPEGs are read; convert it to RGB");
    refuse(what, std::string("bad JPEG: ") + errors.message);
  }
  check_dimensions(what, "JPEG", header.width, header.height, bytes.size());
  if (header.components != 3) {
    refuse(what, "JPEG of colour space " + std::to_string(static_cast<int>(header.color_space)) +
                     " did not convert to RGB");
  }
  Image image;
  image.width = header.width;
  image.height = header.height;
  const size_t row_bytes = static_cast<size_t>(header.width) * 3;
  image.rgb.resize(row_bytes * header.height);
  if (!read_jpeg_rows(&cinfo, &errors, image.rgb.data(), row_bytes)) {
    refuse(what, std::string("bad JPEG: ") + errors.message);
  }
  return image;
}

}  // namespace strata::vision::detail
