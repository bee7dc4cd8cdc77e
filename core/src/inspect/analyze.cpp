// Byte accounting of a GGUF: by part, by type, and the bytes one token reads.
#include <algorithm>
#include <map>

#include "model_facts.hpp"
#include "strata/inspect.hpp"

namespace strata::inspect {

void Tally::add(const gguf::TensorView& t) {
  ++tensors;
  elements += t.n_elements;
  bytes += t.n_bytes;
}

double Tally::bits_per_weight() const {
  return elements == 0 ? 0.0 : static_cast<double>(bytes) * 8.0 / static_cast<double>(elements);
}

namespace {

// Bytes one token reads, from the tensors' roles and the expert counts.
TokenReads token_reads(const gguf::Model& model, const std::vector<TensorRole>& roles, const ExpertCounts& experts) {
  TokenReads r;
  r.n_expert = experts.n_expert;
  r.n_expert_used = experts.n_expert_used;
  std::map<int, uint64_t> routed_by_layer;
  const gguf::TensorView* embeddings = nullptr;
  bool has_head = false;
  const auto tensors = model.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    switch (roles[i].part) {
      case TensorPart::RoutedExperts: routed_by_layer[roles[i].layer.value_or(-1)] += t.n_bytes; break;
      case TensorPart::Embeddings:
        if (embeddings == nullptr) {
          embeddings = &t;
        } else {
          r.dense += t.n_bytes;
        }
        break;
      case TensorPart::Head:
        has_head = true;
        r.dense += t.n_bytes;
        break;
      default: r.dense += t.n_bytes; break;
    }
  }
  if (embeddings != nullptr) {
    r.tied_head = !has_head;
    // A lookup reads one row (ne[0] values); a tied head reads every row.
    const uint64_t rows = embeddings->ne[0] == 0 ? 0 : embeddings->n_elements / embeddings->ne[0];
    r.dense += r.tied_head || rows == 0 ? embeddings->n_bytes : embeddings->n_bytes / rows;
  }
  if (r.n_expert > 0) {
    for (const auto& [layer, bytes] : routed_by_layer)
      r.routed += bytes / r.n_expert * r.n_expert_used + bytes % r.n_expert * r.n_expert_used / r.n_expert;
  }
  return r;
}

}  // namespace

Report analyze(const gguf::Model& model) {
  Report report;
  for (size_t i = 0; i < model.part_count(); ++i) {
    const gguf::File& f = model.part(i);
    report.files.push_back({f.name(), f.version(), f.alignment(), f.size(), f.data_offset(), f.tensors().size(),
                            f.metadata().entries().size()});
    // A file without tensors may end before its (padded) data offset.
    report.data_bytes += f.size() > f.data_offset() ? f.size() - f.data_offset() : 0;
  }

  std::map<uint32_t, Tally> by_type;
  bool has_routed = false;
  for (const auto& t : model.tensors()) {
    const TensorRole role = classify_tensor(t.name);
    report.roles.push_back(role);
    report.by_part[static_cast<size_t>(role.part)].add(t);
    by_type[static_cast<uint32_t>(t.type)].add(t);
    report.total.add(t);
    has_routed = has_routed || role.part == TensorPart::RoutedExperts;
  }
  for (const auto& [id, tally] : by_type) report.by_type.emplace_back(static_cast<format::GgmlType>(id), tally);

  const auto& meta = model.metadata();
  if (const auto* arch = meta.find("general.architecture"); arch != nullptr) {
    if (const auto name = arch->value.as_string()) report.architecture = std::string(*name);
  }
  if (!report.architecture || model.tensors().empty()) return report;

  ModelFacts facts = read_model_facts(model, has_routed);
  report.arch_issues = std::move(facts.issues);
  report.warnings = std::move(facts.warnings);
  if (facts.experts) report.per_token = token_reads(model, report.roles, *facts.experts);
  return report;
}

}  // namespace strata::inspect
