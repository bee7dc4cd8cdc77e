#include "builder.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <tuple>

namespace strata::config {
namespace {

int kind_rank(const Diagnostic& d) {
  if (d.severity == Diagnostic::Severity::Warning) return 3;
  switch (d.kind) {
    case Diagnostic::Kind::Syntax:
    case Diagnostic::Kind::Schema: return 0;
    case Diagnostic::Kind::Conflict: return 1;
    case Diagnostic::Kind::MissingFile: return 2;
  }
  return 0;
}

}  // namespace

Where where(const Source& source, const YAML::Mark& mark) {
  if (source.kind != Source::Kind::File || mark.is_null()) return where(source);
  Where w;
  w.line = mark.line + 1;
  w.column = mark.column + 1;
  w.origin = source.name + ":" + std::to_string(w.line) + ":" + std::to_string(w.column);
  w.source_rank = 0;
  w.provenance.kind = Provenance::Kind::File;
  w.provenance.file = source.name;
  w.provenance.line = w.line;
  w.provenance.column = w.column;
  return w;
}

Where where(const Source& source) {
  Where w;
  w.order = source.order;
  switch (source.kind) {
    case Source::Kind::File:
      w.origin = source.name;
      w.source_rank = 0;
      w.provenance.kind = Provenance::Kind::File;
      w.provenance.file = source.name;
      break;
    case Source::Kind::Environment:
      w.origin = "environment " + source.name;
      w.source_rank = 1;
      w.provenance.kind = Provenance::Kind::Environment;
      w.provenance.variable = source.name;
      break;
    case Source::Kind::Override:
      w.origin = "-o " + source.name;
      w.source_rank = 2;
      w.provenance.kind = Provenance::Kind::Override;
      break;
  }
  return w;
}

void Builder::error(Diagnostic::Kind kind, const Where& at, std::string message) {
  Problem p;
  p.diagnostic.kind = kind;
  p.diagnostic.origin = at.origin;
  p.diagnostic.line = at.line;
  p.diagnostic.column = at.column;
  p.diagnostic.message = std::move(message);
  p.source_rank = at.source_rank;
  p.order = at.order;
  p.seq = problems_.size();
  problems_.push_back(std::move(p));
}

void Builder::warning(const Where& at, std::string message) {
  error(Diagnostic::Kind::Schema, at, std::move(message));
  problems_.back().diagnostic.severity = Diagnostic::Severity::Warning;
}

void Builder::set_origin(const std::string& key, const Where& at) {
  origins_[key] = at;
  launch.provenance[key] = at.provenance;
}

const Where* Builder::origin_of(const std::string& key) const {
  auto it = origins_.find(key);
  return it == origins_.end() ? nullptr : &it->second;
}

PluginEntry& Builder::plugin(const std::string& name) {
  for (PluginEntry& p : launch.plugins)
    if (p.name == name) return p;
  launch.plugins.push_back(PluginEntry{name, true, {}});
  launch.provenance["plugins." + name + ".enabled"] = Provenance{};
  return launch.plugins.back();
}

std::vector<Diagnostic> Builder::diagnostics() const {
  std::vector<const Problem*> order;
  for (const Problem& p : problems_) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Problem* a, const Problem* b) {
    return std::make_tuple(kind_rank(a->diagnostic), a->source_rank, a->order, a->diagnostic.line,
                           a->diagnostic.column, a->seq) <
           std::make_tuple(kind_rank(b->diagnostic), b->source_rank, b->order, b->diagnostic.line,
                           b->diagnostic.column, b->seq);
  });
  std::vector<Diagnostic> out;
  for (const Problem* p : order) out.push_back(p->diagnostic);
  return out;
}

bool Builder::has_errors() const {
  return std::any_of(problems_.begin(), problems_.end(),
                     [](const Problem& p) { return p.diagnostic.severity == Diagnostic::Severity::Error; });
}

}  // namespace strata::config
