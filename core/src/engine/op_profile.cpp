#include "strata/op_profile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "strata/backend.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"

namespace strata {
namespace {

std::string type_name(uint32_t type) {
  const auto tr = format::type_traits(type);
  return tr ? std::string(tr->name) : std::to_string(type);
}

uint64_t matrix_bytes(uint32_t type, int64_t row, int64_t rows) {
  const auto tr = format::type_traits(type);
  return tr ? format::row_bytes(tr->type, static_cast<uint64_t>(row)) * static_cast<uint64_t>(rows) : 0;
}

}  // namespace

void OpProfile::add(const strata_op& op, double seconds) {
  std::string key = op_kind_name(op.kind);
  uint64_t bytes = 0;
  if (op.kind == STRATA_OP_MUL_MAT) {
    const strata_tensor& w = op.src[0];
    key += " " + type_name(w.type) + " " + std::to_string(w.ne[0]) + "x" + std::to_string(w.ne[1]);
    bytes = matrix_bytes(w.type, w.ne[0], w.ne[1]);
  } else if (op.kind == STRATA_OP_MOE && op.extra != nullptr) {
    const auto& m = *static_cast<const strata_moe_op*>(op.extra);
    if (m.n_experts > 0) key += " " + type_name(m.weights[0].gate_type) + "/" + type_name(m.weights[0].down_type);
    for (uint32_t e = 0; e < m.n_experts; ++e) {
      const strata_expert_weights& w = m.weights[e];
      bytes += matrix_bytes(w.gate_type, m.n_embd, m.n_ff) + matrix_bytes(w.up_type, m.n_embd, m.n_ff) +
               matrix_bytes(w.down_type, m.n_ff, m.n_embd);
    }
  } else if (op.kind == STRATA_OP_MOE_ROUTED && op.extra != nullptr) {
    const auto& t = *static_cast<const strata_expert_table*>(op.extra);
    key += " " + type_name(t.gate_type) + "/" + type_name(t.down_type);
    // Distinct experts are not known on the host: count k per token (an upper bound for decode).
    const uint64_t chosen = static_cast<uint64_t>(op.src[1].ne[0] * op.src[1].ne[1]);
    bytes = chosen * (matrix_bytes(t.gate_type, t.n_embd, t.n_ff) + matrix_bytes(t.up_type, t.n_embd, t.n_ff) +
                      matrix_bytes(t.down_type, t.n_ff, t.n_embd));
  }
  Entry& e = entries_[key];
  ++e.calls;
  e.seconds += seconds;
  e.weight_bytes += bytes;
}

void OpProfile::add_host(double seconds) {
  Entry& e = entries_["host steps (routing to MOE)"];
  ++e.calls;
  e.seconds += seconds;
}

std::string OpProfile::table(uint64_t units, const char* unit) const {
  std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0.0;
  for (const auto& r : rows) total += r.second.seconds;
  std::string out = std::string("| op | calls | total ms | ms/") + unit +
                    " | share | GB/s (weights) |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
  char line[256];
  for (const auto& [key, e] : rows) {
    const double gbs = e.weight_bytes > 0 && e.seconds > 0 ? static_cast<double>(e.weight_bytes) / e.seconds / 1e9 : 0.0;
    std::snprintf(line, sizeof line, "| %s | %llu | %.2f | %.3f | %.1f%% | %s |\n", key.c_str(),
                  static_cast<unsigned long long>(e.calls), e.seconds * 1e3,
                  units > 0 ? e.seconds * 1e3 / static_cast<double>(units) : 0.0, total > 0 ? 100.0 * e.seconds / total : 0.0,
                  gbs > 0 ? std::to_string(static_cast<int>(gbs + 0.5)).c_str() : "");
    out += line;
  }
  std::snprintf(line, sizeof line, "| all ops | | %.2f | %.3f | 100%% | |\n", total * 1e3,
                units > 0 ? total * 1e3 / static_cast<double>(units) : 0.0);
  out += line;
  return out;
}

void compute_profiled(Backend& backend, std::span<const strata_op> ops, OpProfile& profile) {
  if (ops.empty()) return;
  strata_op stamp{};
  stamp.struct_size = sizeof stamp;
  stamp.kind = STRATA_OP_TIMESTAMP;
  Buffer<int64_t> probe(1, backend.device_memory());
  stamp.dst = make_tensor(probe.data(), format::GgmlType::I64, {1});
  if (!backend.supports(stamp)) {
    for (const strata_op& op : ops) {
      const auto t0 = std::chrono::steady_clock::now();
      backend.compute(std::span<const strata_op>(&op, 1));
      profile.add(op, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return;
  }
  Buffer<int64_t> t(ops.size() + 1, backend.device_memory());
  std::vector<strata_op> stamped;
  for (size_t i = 0; i <= ops.size(); ++i) {
    stamp.dst = make_tensor(t.data() + i, format::GgmlType::I64, {1});
    stamped.push_back(stamp);
    if (i < ops.size()) stamped.push_back(ops[i]);
  }
  backend.compute(stamped);
  std::vector<int64_t> host(t.size());
  if (t.on_device()) {
    backend.device_memory()->download(host.data(), t.data(), host.size() * sizeof(int64_t));
  } else {
    std::copy_n(t.data(), host.size(), host.data());
  }
  for (size_t i = 0; i < ops.size(); ++i) profile.add(ops[i], static_cast<double>(host[i + 1] - host[i]) * 1e-9);
}

}  // namespace strata
