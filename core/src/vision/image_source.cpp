// An image given as a file path or a data URL (`strata engine` requests, the gate's prompt files): its bytes as
// given and the decoded picture.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "strata/vision.hpp"

namespace strata::vision {

ImageSource read_image_source(const std::string& file_or_data_url, std::string_view what) {
  ImageSource s;
  // A URL (data: decoded; http(s) and the like refused by decode_data_url, which names the fix), else a file.
  if (is_data_url(file_or_data_url) || file_or_data_url.find("://") != std::string::npos) {
    s.bytes = decode_data_url(file_or_data_url, what);
    s.image = decode_image(s.bytes, what);
    return s;
  }
  std::ifstream in(file_or_data_url, std::ios::binary);
  if (!in) throw Error(std::string(what) + ": cannot open image " + file_or_data_url + ": " + std::strerror(errno));
  s.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(std::string(what) + ": cannot read image " + file_or_data_url + ": " + std::strerror(errno));
  s.image = decode_image(s.bytes, file_or_data_url);
  return s;
}

}  // namespace strata::vision
