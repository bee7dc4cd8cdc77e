// One tensor's facts and first values (`strata inspect FILE --tensor NAME`), as text or JSON.
#include <cmath>
#include <nlohmann/json.hpp>

#include "strata/inspect.hpp"
#include "text_format.hpp"

namespace strata::inspect {
namespace {

constexpr size_t kValuesPerLine = 8;

}  // namespace

std::string render_tensor_text(const gguf::TensorView& tensor, const std::vector<float>& values) {
  const TensorRole role = classify_tensor(tensor.name);
  std::string out = "tensor: " + detail::display_name(tensor.name) + "\n";
  out += "  type: " + std::string(format::traits(tensor.type).name) + "\n";
  out += "  shape: " + detail::shape_text(tensor.shape()) + " (ggml order, innermost first)\n";
  out += "  elements: " + std::to_string(tensor.n_elements) + "\n";
  out += "  bytes: " + std::to_string(tensor.n_bytes) + " (" + detail::human_bytes(tensor.n_bytes) + ")\n";
  out += "  offset: byte " + std::to_string(tensor.file_offset) + " of file part " + std::to_string(tensor.split + 1) +
         "\n";
  out += "  part: " + std::string(part_name(role.part));
  if (role.layer) out += ", layer " + std::to_string(*role.layer);
  out += "\n  first " + std::to_string(values.size()) + " values (dequantized to f32):";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i % kValuesPerLine == 0 ? "\n   " : "";
    out += " " + detail::format_f32(values[i]);
  }
  out += "\n";
  return out;
}

std::string render_tensor_json(const gguf::TensorView& tensor, const std::vector<float>& values) {
  using Json = nlohmann::ordered_json;
  const TensorRole role = classify_tensor(tensor.name);
  Json shape = Json::array();
  for (uint64_t d : tensor.shape()) shape.push_back(d);
  Json vals = Json::array();
  // Non-finite values have no JSON number: they become null.
  for (float v : values) vals.push_back(std::isfinite(v) ? Json(detail::f32_as_short_double(v)) : Json(nullptr));
  const Json out = {{"name", std::string(tensor.name)},
                    {"type", format::traits(tensor.type).name},
                    {"shape", std::move(shape)},
                    {"elements", tensor.n_elements},
                    {"bytes", tensor.n_bytes},
                    {"offset", tensor.file_offset},
                    {"file", tensor.split},
                    {"part", part_name(role.part)},
                    {"layer", role.layer ? Json(*role.layer) : Json(nullptr)},
                    {"values", std::move(vals)}};
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace strata::inspect
