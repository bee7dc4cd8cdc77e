#include "strata/format/flag_ops.hpp"

#include "strata/format/tensor_checks.hpp"

namespace strata::format {
namespace {

std::optional<std::string> check_flag(const strata_tensor& t, const char* op, const char* what) {
  if (!is_type(t, GgmlType::I32)) return std::string(op) + " " + what + " must be i32";
  if (t.data == nullptr) return std::string(op) + " " + what + " has no data";
  if (t.ne[0] != 1 || row_count(t) != 1) return std::string(op) + " " + what + " must be one value";
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0) return std::string(op) + " " + what + " is not 4-byte aligned";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_copy(const strata_op& op) {
  const strata_tensor &d = op.dst, &s = op.src[0];
  if (!is_type(s, GgmlType::F32) && !is_type(s, GgmlType::I32)) {
    return "COPY copies f32 or i32 (4-byte elements), not " + type_name(s.type);
  }
  if (auto e = check_matrix(s, "COPY src0", static_cast<GgmlType>(s.type))) return e;
  if (auto e = check_matrix(d, "COPY dst", static_cast<GgmlType>(s.type))) return e;
  if (d.ne[0] != s.ne[0] || d.ne[1] != s.ne[1]) return std::string("COPY dst and src0 differ in shape");
  if (d.data == nullptr || s.data == nullptr) return std::string("COPY needs data in dst and src0");
  if ((reinterpret_cast<uintptr_t>(d.data) | reinterpret_cast<uintptr_t>(s.data) | d.nb[1] | s.nb[1]) % 4 != 0) {
    return std::string("COPY rows are not 4-byte aligned");
  }
  return std::nullopt;
}

std::optional<std::string> check_signal(const strata_op& op) { return check_flag(op.dst, "SIGNAL", "dst"); }

std::optional<std::string> check_wait(const strata_op& op) {
  if (auto e = check_flag(op.src[0], "WAIT", "src0")) return e;
  if (op.i[1] < 0) return std::string("WAIT i[1] (the limit in ms) must not be negative");
  return std::nullopt;
}

}  // namespace strata::format
