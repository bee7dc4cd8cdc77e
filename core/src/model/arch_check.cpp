#include <string>
#include <unordered_set>

#include "strata/arch.hpp"
#include "strata/log.hpp"

namespace strata {

std::string format_shape(const std::vector<uint64_t>& ne) {
  std::string out = "[";
  for (size_t i = 0; i < ne.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ne[i]);
  }
  return out + "]";
}

std::vector<ArchIssue> check_tensors(const HParams& hp, const gguf::Model& model) {
  const std::vector<TensorSpec> specs = expected_tensors(hp);

  // Tensors a present fused form stands in for.
  std::unordered_set<std::string> replaced;
  for (const TensorSpec& s : specs) {
    if (!s.replaces.empty() && model.find_tensor(s.name) != nullptr) {
      replaced.insert(s.replaces.begin(), s.replaces.end());
    }
  }

  std::vector<ArchIssue> issues;
  std::unordered_set<std::string_view> known;
  const std::string arch(arch_name(hp.arch));
  for (const TensorSpec& s : specs) {
    known.insert(s.name);
    const gguf::TensorView* t = model.find_tensor(s.name);
    if (t == nullptr) {
      if (s.required && replaced.count(s.name) == 0) {
        issues.push_back({ArchIssue::Kind::Missing, s.name,
                          s.name + ": missing; a " + arch + " model of this shape needs " + format_shape(s.ne)});
      }
      continue;
    }
    const std::vector<uint64_t> have(t->ne.begin(), t->ne.begin() + t->n_dims);
    if (have != s.ne) {
      issues.push_back({ArchIssue::Kind::Shape, s.name,
                        s.name + ": shape " + format_shape(s.ne) + " expected, file has " + format_shape(have)});
    }
  }
  for (const gguf::TensorView& t : model.tensors()) {
    if (known.count(t.name) == 0) {
      const std::string name(t.name);
      issues.push_back({ArchIssue::Kind::Unexpected, name, name + ": not a tensor of a " + arch + " model"});
    }
  }
  return issues;
}

void require_valid(const HParams& hp, const gguf::Model& model) {
  std::string errors;
  size_t count = 0;
  for (const ArchIssue& issue : check_tensors(hp, model)) {
    if (issue.kind == ArchIssue::Kind::Unexpected) {
      log::warn(model.name() + ": " + issue.message + " (ignored)");
      continue;
    }
    errors += "\n  " + issue.message;
    ++count;
  }
  if (count > 0) {
    throw ArchError(model.name() + ": " + std::to_string(count) + " tensor" + (count == 1 ? "" : "s") +
                    " missing or misshapen for " + std::string(arch_name(hp.arch)) +
                    " (the metadata and the tensors disagree; is the file complete and from a supported converter?):" +
                    errors);
  }
}

}  // namespace strata
