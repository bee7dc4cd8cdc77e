// The inspect report as text: file facts, metadata, tensor table, byte accounting, bytes per token, warnings.
#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "strata/inspect.hpp"
#include "text_format.hpp"

namespace strata::inspect {
namespace {

// Widest column allowed for key and tensor names; longer ones push their row's other columns right.
constexpr size_t kMaxNameWidth = 48;
// Architecture issues listed in text; a file missing whole blocks has hundreds, and the first few tell the story.
constexpr size_t kMaxIssuesShown = 20;

void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n > 0) {
    const size_t old = out->size();
    out->resize(old + static_cast<size_t>(n) + 1);
    std::vsnprintf(out->data() + old, static_cast<size_t>(n) + 1, fmt, ap);
    out->resize(old + static_cast<size_t>(n));
  }
  va_end(ap);
}

// "32768", "6.74 M", "30.53 B": parameter counts.
std::string human_count(uint64_t n) {
  if (n < 1000000) return std::to_string(n);
  static constexpr const char* kUnits[] = {"M", "B", "T"};
  double v = static_cast<double>(n) / 1e6;
  size_t unit = 0;
  while (v >= 1000.0 && unit + 1 < std::size(kUnits)) {
    v /= 1000.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  return buf;
}

std::string share(uint64_t part, uint64_t whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

void tally_row(std::string* out, std::string_view label, const Tally& t, uint64_t total_bytes) {
  appendf(out, "  %-16.*s %8llu %12s %14s %7s %7.2f\n", static_cast<int>(label.size()), label.data(),
          static_cast<unsigned long long>(t.tensors), human_count(t.elements).c_str(),
          detail::human_bytes(t.bytes).c_str(), share(t.bytes, total_bytes).c_str(), t.bits_per_weight());
}

void tally_header(std::string* out, const char* first) {
  appendf(out, "  %-16s %8s %12s %14s %7s %7s\n", first, "TENSORS", "PARAMS", "BYTES", "SHARE", "BPW");
}

void file_section(std::string* out, const gguf::Model& model, const Report& r) {
  const FileFacts& first = r.files.front();
  uint64_t size = 0;
  for (const auto& f : r.files) size += f.size;
  appendf(out, "file: %s\n", first.path.c_str());
  appendf(out, "  GGUF version %u, alignment %u, %llu metadata keys, %zu tensors\n", first.version, first.alignment,
          static_cast<unsigned long long>(first.metadata_keys), model.tensors().size());
  appendf(out, "  size: %llu bytes (%s)", static_cast<unsigned long long>(size), detail::human_bytes(size).c_str());
  if (r.files.size() > 1) appendf(out, " in %zu parts", r.files.size());
  out->push_back('\n');
  if (r.total.tensors > 0) {
    appendf(out, "  tensor data: %llu bytes (%s) + %llu bytes of alignment padding\n",
            static_cast<unsigned long long>(r.total.bytes), detail::human_bytes(r.total.bytes).c_str(),
            static_cast<unsigned long long>(r.data_bytes - std::min(r.data_bytes, r.total.bytes)));
  }
  if (r.files.size() > 1) {
    for (size_t i = 0; i < r.files.size(); ++i) {
      const auto& f = r.files[i];
      appendf(out, "  part %zu: %s, %llu bytes, %llu tensors, data at byte %llu\n", i + 1, f.path.c_str(),
              static_cast<unsigned long long>(f.size), static_cast<unsigned long long>(f.tensors),
              static_cast<unsigned long long>(f.data_offset));
    }
  } else {
    appendf(out, "  data section at byte %llu\n", static_cast<unsigned long long>(first.data_offset));
  }
  if (!r.architecture) {
    appendf(out, "  architecture: none (not a model file)\n");
  } else {
    appendf(out, "  architecture: %s%s\n", r.architecture->c_str(),
            r.total.tensors == 0 ? " (no tensors: a vocabulary-only file)" : "");
  }
}

void metadata_section(std::string* out, const gguf::Model& model, const Limits& limits) {
  const auto entries = model.metadata().entries();
  appendf(out, "\nmetadata (%zu keys):\n", entries.size());
  size_t width = 0;
  for (const auto& kv : entries) width = std::max(width, std::min(kv.key.size(), kMaxNameWidth));
  for (const auto& kv : entries) {
    const std::string key = detail::display_name(kv.key);
    appendf(out, "  %-*s  %s\n", static_cast<int>(width), key.c_str(), describe_value(kv.value, limits).c_str());
  }
}

void tensor_section(std::string* out, const gguf::Model& model, const Report& r) {
  const auto tensors = model.tensors();
  if (tensors.empty()) {
    appendf(out, "\ntensors: none\n");
    return;
  }
  appendf(out, "\ntensors (%zu; shape in ggml order, innermost first):\n", tensors.size());
  size_t width = 4;
  for (const auto& t : tensors) width = std::max(width, std::min(t.name.size(), kMaxNameWidth));
  // The file column only for split models; the part column last, so that rows carry no trailing blanks.
  const bool split = r.files.size() > 1;
  appendf(out, "  %-*s  %-8s %-22s %14s  %s%s\n", static_cast<int>(width), "NAME", "TYPE", "SHAPE", "BYTES",
          split ? "FILE  " : "", "PART");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const auto type = format::traits(t.type).name;
    const auto part = part_name(r.roles[i].part);
    const std::string name = detail::display_name(t.name);
    appendf(out, "  %-*s  %-8.*s %-22s %14llu  ", static_cast<int>(width), name.c_str(), static_cast<int>(type.size()),
            type.data(), detail::shape_text(t.shape()).c_str(), static_cast<unsigned long long>(t.n_bytes));
    if (split) appendf(out, "%-4u  ", t.split + 1);
    appendf(out, "%.*s\n", static_cast<int>(part.size()), part.data());
  }
}

void tally_sections(std::string* out, const Report& r) {
  if (r.total.tensors == 0) return;
  appendf(out, "\nbytes by part:\n");
  tally_header(out, "PART");
  for (int p = 0; p < kTensorPartCount; ++p) {
    const Tally& t = r.by_part[static_cast<size_t>(p)];
    if (t.tensors > 0) tally_row(out, part_name(static_cast<TensorPart>(p)), t, r.total.bytes);
  }
  tally_row(out, "total", r.total, r.total.bytes);
  appendf(out, "\nbytes by type:\n");
  tally_header(out, "TYPE");
  for (const auto& [type, t] : r.by_type) tally_row(out, format::traits(type).name, t, r.total.bytes);
  appendf(out, "\nbits per weight: %.2f overall\n", r.total.bits_per_weight());
}

void token_section(std::string* out, const Report& r) {
  if (!r.per_token) return;
  const TokenReads& t = *r.per_token;
  const char* embedding = t.tied_head ? "the embedding table (tied head)" : "one embedding row";
  appendf(out, "\nbytes one token reads (decode speed depends on these):\n");
  if (t.n_expert == 0) {
    appendf(out, "  dense model: %llu bytes (%s): every weight but the embedding table, plus %s\n",
            static_cast<unsigned long long>(t.dense), detail::human_bytes(t.dense).c_str(), embedding);
    return;
  }
  appendf(out, "  routed experts: %14llu bytes (%s): %u of %u experts per layer\n",
          static_cast<unsigned long long>(t.routed), detail::human_bytes(t.routed).c_str(), t.n_expert_used,
          t.n_expert);
  appendf(out, "  dense:          %14llu bytes (%s): attention, norms, router, shared experts, dense ffn, head, %s\n",
          static_cast<unsigned long long>(t.dense), detail::human_bytes(t.dense).c_str(), embedding);
  appendf(out, "  total:          %14llu bytes (%s)\n", static_cast<unsigned long long>(t.total()),
          detail::human_bytes(t.total()).c_str());
}

void check_section(std::string* out, const Report& r) {
  if (!r.arch_issues) return;
  const auto& issues = *r.arch_issues;
  appendf(out, "\narchitecture check (%s): ", r.architecture->c_str());
  if (issues.empty()) {
    appendf(out, "passed: every tensor it needs is present with the expected shape\n");
    return;
  }
  appendf(out,
          "%zu issue%s (inspect shows them; loading the model for inference refuses missing or misshapen "
          "tensors)\n",
          issues.size(), issues.size() == 1 ? "" : "s");
  const size_t shown = std::min(issues.size(), kMaxIssuesShown);
  for (size_t i = 0; i < shown; ++i) appendf(out, "warning: %s\n", issues[i].c_str());
  if (shown < issues.size()) appendf(out, "... and %zu more (--json lists them all)\n", issues.size() - shown);
}

}  // namespace

std::string render_text(const gguf::Model& model, const Report& report, const Limits& limits) {
  std::string out;
  file_section(&out, model, report);
  metadata_section(&out, model, limits);
  tensor_section(&out, model, report);
  tally_sections(&out, report);
  token_section(&out, report);
  check_section(&out, report);
  if (!report.warnings.empty()) out += "\n";
  for (const auto& w : report.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace strata::inspect
