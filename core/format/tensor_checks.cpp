// The descriptor checks of tensor_checks.hpp.
#include "strata/format/tensor_checks.hpp"

namespace strata::format {

std::optional<std::string> check_op_array(const strata_op* ops, size_t n) {
  if (n == 0 || ops[0].struct_size == sizeof(strata_op)) return std::nullopt;
  return "the host's strata_op is " + std::to_string(ops[0].struct_size) + " bytes, this plugin's " +
         std::to_string(sizeof(strata_op)) + ": build the host and the plugin from one tree";
}

std::string type_name(uint32_t type) {
  const auto tr = type_traits(type);
  return tr ? std::string(tr->name) : "type " + std::to_string(type);
}

std::optional<std::string> check_matrix(const strata_tensor& t, const char* what) {
  const auto tr = type_traits(t.type);
  if (!tr) return std::string(what) + " has unknown type id " + std::to_string(t.type);
  if (t.data == nullptr) return std::string(what) + " has no data";
  for (int d = 0; d < 4; ++d) {
    if (t.ne[d] < 1) return std::string(what) + " has ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]);
  }
  if (t.ne[2] != 1 || t.ne[3] != 1) return std::string(what) + " has more than two dimensions";
  if (t.ne[0] % tr->block_elems != 0) {
    return std::string(what) + " rows of " + std::to_string(t.ne[0]) + " values are not whole " +
           std::string(tr->name) + " blocks";
  }
  if (t.nb[0] != tr->block_bytes) return std::string(what) + " is not contiguous in dimension 0";
  if (t.ne[1] > 1 && t.nb[1] < row_bytes(static_cast<GgmlType>(t.type), static_cast<uint64_t>(t.ne[0]))) {
    return std::string(what) + " rows overlap (nb[1] smaller than a row)";
  }
  return std::nullopt;
}

std::optional<std::string> check_matrix(const strata_tensor& t, const char* what, GgmlType type) {
  if (!is_type(t, type)) {
    return std::string(what) + " is " + type_name(t.type) + ", expected " +
           std::string(traits(type).name);
  }
  return check_matrix(t, what);
}

std::optional<std::string> check_rows(const strata_tensor& t, const char* what, GgmlType type) {
  if (!is_type(t, type)) {
    return std::string(what) + " is " + type_name(t.type) + ", expected " + std::string(traits(type).name);
  }
  if (t.data == nullptr) return std::string(what) + " has no data";
  const format::TypeTraits& tr = traits(type);
  for (int d = 0; d < 4; ++d) {
    if (t.ne[d] < 1) return std::string(what) + " has ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]);
  }
  if (t.nb[0] != tr.block_bytes) return std::string(what) + " is not contiguous in dimension 0";
  if (t.ne[0] % tr.block_elems != 0) return std::string(what) + " rows are not whole blocks";
  if ((t.ne[2] > 1 && t.nb[2] != t.nb[1] * static_cast<uint64_t>(t.ne[1])) ||
      (t.ne[3] > 1 && t.nb[3] != t.nb[2] * static_cast<uint64_t>(t.ne[2]))) {
    return std::string(what) + " rows are not evenly spaced (nb[2] != nb[1] * ne[1] or nb[3] != nb[2] * ne[2])";
  }
  if (t.nb[1] % tr.block_bytes != 0 && row_count(t) > 1) return std::string(what) + " rows are misaligned";
  return std::nullopt;
}

}  // namespace strata::format
