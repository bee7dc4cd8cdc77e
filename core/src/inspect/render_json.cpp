// The inspect report as one JSON object: the text report's facts, with exact numbers.
#include <nlohmann/json.hpp>

#include "strata/inspect.hpp"
#include "text_format.hpp"

namespace strata::inspect {
namespace {

using Json = nlohmann::ordered_json;
using gguf::ValueType;

Json scalar_json(const gguf::Value& v) {
  switch (v.type()) {
    // Through the shortest text, so that 1e-05f reads 1e-05 and not 9.999999747378752e-06.
    case ValueType::F32: return detail::f32_as_short_double(static_cast<float>(*v.as_f64()));
    case ValueType::F64: return *v.as_f64();
    case ValueType::Bool: return *v.as_bool();
    case ValueType::I8:
    case ValueType::I16:
    case ValueType::I32:
    case ValueType::I64: return *v.as_i64();
    default: return *v.as_u64();
  }
}

// A value's fields: {"type", "value"} or, for arrays, {"type", "element_type", "count", "values"}, with "length"
// and "truncated" where a long string or array was cut.
void add_value(Json* j, const gguf::Value& v, const Limits& limits, int depth) {
  (*j)["type"] = gguf::value_type_name(v.type());
  if (v.type() == ValueType::String) {
    const std::string_view s = *v.as_string();
    const bool cut = s.size() > limits.string_bytes;
    (*j)["value"] = std::string(cut ? detail::utf8_prefix(s, limits.string_bytes) : s);
    if (cut) {
      (*j)["length"] = s.size();
      (*j)["truncated"] = true;
    }
    return;
  }
  if (v.type() != ValueType::Array) {
    (*j)["value"] = scalar_json(v);
    return;
  }
  const gguf::ArrayView a = *v.as_array();
  (*j)["element_type"] = gguf::value_type_name(a.element_type());
  (*j)["count"] = a.size();
  if (depth > detail::kMaxShownDepth) return;
  const bool whole = a.size() <= limits.array_whole;
  const uint64_t shown = whole ? a.size() : limits.array_head;
  Json values = Json::array();
  for (uint64_t i = 0; i < shown; ++i) {
    const gguf::Value e = a[i];
    if (e.type() == ValueType::String) {
      Json s;
      add_value(&s, e, limits, depth + 1);
      values.push_back(s.contains("truncated") ? s : s["value"]);
    } else if (e.type() == ValueType::Array) {
      Json inner;
      add_value(&inner, e, limits, depth + 1);
      values.push_back(std::move(inner));
    } else {
      values.push_back(scalar_json(e));
    }
  }
  (*j)["values"] = std::move(values);
  if (!whole) (*j)["truncated"] = true;
}

Json tally_json(const Tally& t) {
  return {
      {"tensors", t.tensors}, {"elements", t.elements}, {"bytes", t.bytes}, {"bits_per_weight", t.bits_per_weight()}};
}

Json shape_json(const gguf::TensorView& t) {
  Json s = Json::array();
  for (uint64_t d : t.shape()) s.push_back(d);
  return s;
}

std::string dump(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

}  // namespace

std::string render_json(const gguf::Model& model, const Report& report, const Limits& limits) {
  Json out;
  Json parts = Json::array();
  uint64_t size = 0;
  for (const auto& f : report.files) {
    parts.push_back({{"path", f.path},
                     {"size", f.size},
                     {"data_offset", f.data_offset},
                     {"tensors", f.tensors},
                     {"metadata_keys", f.metadata_keys}});
    size += f.size;
  }
  const FileFacts& first = report.files.front();
  out["file"] = {{"path", first.path},
                 {"version", first.version},
                 {"alignment", first.alignment},
                 {"size", size},
                 {"tensor_bytes", report.total.bytes},
                 {"data_bytes", report.data_bytes},
                 {"parts", std::move(parts)}};
  out["architecture"] = report.architecture ? Json(*report.architecture) : Json(nullptr);

  Json metadata = Json::array();
  for (const auto& kv : model.metadata().entries()) {
    Json e;
    e["key"] = std::string(kv.key);
    add_value(&e, kv.value, limits, 1);
    metadata.push_back(std::move(e));
  }
  out["metadata"] = std::move(metadata);

  Json tensors = Json::array();
  const auto views = model.tensors();
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& t = views[i];
    tensors.push_back({{"name", std::string(t.name)},
                       {"type", format::traits(t.type).name},
                       {"shape", shape_json(t)},
                       {"elements", t.n_elements},
                       {"bytes", t.n_bytes},
                       {"offset", t.file_offset},
                       {"file", t.split},
                       {"part", part_name(report.roles[i].part)},
                       {"layer", report.roles[i].layer ? Json(*report.roles[i].layer) : Json(nullptr)}});
  }
  out["tensors"] = std::move(tensors);

  Json by_part = Json::object();
  for (int p = 0; p < kTensorPartCount; ++p) {
    by_part[std::string(part_name(static_cast<TensorPart>(p)))] = tally_json(report.by_part[static_cast<size_t>(p)]);
  }
  out["bytes_by_part"] = std::move(by_part);
  Json by_type = Json::object();
  for (const auto& [type, t] : report.by_type) by_type[std::string(format::traits(type).name)] = tally_json(t);
  out["bytes_by_type"] = std::move(by_type);
  out["total"] = tally_json(report.total);

  if (report.per_token) {
    const TokenReads& t = *report.per_token;
    out["per_token"] = {{"n_expert", t.n_expert}, {"n_expert_used", t.n_expert_used}, {"routed_bytes", t.routed},
                        {"dense_bytes", t.dense}, {"total_bytes", t.total()},         {"tied_head", t.tied_head}};
  } else {
    out["per_token"] = nullptr;
  }
  out["arch_issues"] = report.arch_issues ? Json(*report.arch_issues) : Json(nullptr);
  out["warnings"] = report.warnings;
  return dump(out);
}

}  // namespace strata::inspect
