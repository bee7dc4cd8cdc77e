// Split models: llama.cpp's gguf-split writes `<prefix>-00001-of-0000N.gguf` ... `-0000N-of-0000N.gguf`, each part
// with `split.no` (0-based), `split.count` and, in every part, `split.tensors.count` (the model's total); the
// metadata lives in the first part. A Model opens every part and presents their tensors as one list.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "strata/gguf.hpp"
#include "strata/suggest.hpp"

namespace strata::gguf {
namespace {

constexpr std::string_view kSplitSuffix = ".gguf";
constexpr size_t kSplitDigits = 5;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint32_t to_u32(std::string_view digits) {
  uint32_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint32_t>(c - '0');
  return v;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string part_text(uint32_t index, uint32_t count) {
  return "part " + std::to_string(index) + " of " + std::to_string(count);
}

}  // namespace

std::optional<SplitName> parse_split_path(std::string_view path) {
  // <prefix>-NNNNN-of-MMMMM.gguf
  constexpr size_t tail = 1 + kSplitDigits + 4 + kSplitDigits + kSplitSuffix.size();
  if (path.size() <= tail || !path.ends_with(kSplitSuffix)) return std::nullopt;
  const std::string_view t = path.substr(path.size() - tail);
  const std::string_view index = t.substr(1, kSplitDigits);
  const std::string_view count = t.substr(1 + kSplitDigits + 4, kSplitDigits);
  if (t[0] != '-' || t.substr(1 + kSplitDigits, 4) != "-of-" || !all_digits(index) || !all_digits(count)) {
    return std::nullopt;
  }
  SplitName n{std::string(path.substr(0, path.size() - tail)), to_u32(index), to_u32(count)};
  if (n.index == 0 || n.count == 0 || n.index > n.count) return std::nullopt;
  return n;
}

std::string split_path(std::string_view prefix, uint32_t index, uint32_t count) {
  char tail[48];
  std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", index, count);
  return std::string(prefix) + tail;
}

Model Model::open(const std::string& path) {
  Model m;
  m.parts_.push_back(File::open(path));
  const Metadata& first = m.parts_.front().metadata();
  const std::optional<uint32_t> count = first.find_u32(kSplitCountKey);

  if (count && *count == 0) {
    throw SplitError(path + ": " + std::string(kSplitCountKey) + " is 0; a split model has at least one part");
  }
  if (count && *count > 1) {
    const uint32_t no = first.get_u32(kSplitNoKey);
    const std::optional<SplitName> name = parse_split_path(path);
    if (no != 0) {
      std::string hint;
      if (name) hint = ": open the first part, " + split_path(name->prefix, 1, *count);
      throw SplitError(path + ": this is " + part_text(no + 1, *count) + " of a split model" +
                       (hint.empty() ? "; open its first part" : hint));
    }
    if (!name || name->count != *count || name->index != 1) {
      throw SplitError(path + ": " + std::string(kSplitCountKey) + " is " + std::to_string(*count) +
                       " but the file name does not end in " + split_path("", 1, *count) +
                       ", so the other parts cannot be found; keep gguf-split's file names");
    }
    const uint64_t expected_tensors = first.get_u64(kSplitTensorsCountKey);
    for (uint32_t i = 2; i <= *count; ++i) {
      const std::string part_path = split_path(name->prefix, i, *count);
      if (!exists(part_path)) {
        throw SplitError(part_path + ": " + part_text(i, *count) + " of the split model " + path +
                         " is missing (all parts must sit beside the first)");
      }
      File part = File::open(part_path);
      const uint32_t part_count = part.metadata().get_u32(kSplitCountKey);
      const uint32_t part_no = part.metadata().get_u32(kSplitNoKey);
      if (part_count != *count) {
        throw SplitError(part_path + ": " + std::string(kSplitCountKey) + " is " + std::to_string(part_count) +
                         " but the first part says " + std::to_string(*count));
      }
      if (part_no != i - 1) {
        throw SplitError(part_path + ": " + std::string(kSplitNoKey) + " is " + std::to_string(part_no) +
                         " but this file name makes it " + part_text(i, *count) + " (split.no " +
                         std::to_string(i - 1) + ")");
      }
      m.parts_.push_back(std::move(part));
    }
    uint64_t total = 0;
    for (const File& f : m.parts_) total += f.tensors().size();
    if (total != expected_tensors) {
      throw SplitError(path + ": " + std::string(kSplitTensorsCountKey) + " is " + std::to_string(expected_tensors) +
                       " but the " + std::to_string(*count) + " parts hold " + std::to_string(total) + " tensors");
    }
  }

  for (uint32_t p = 0; p < m.parts_.size(); ++p) {
    for (TensorView t : m.parts_[p].tensors()) {
      t.split = p;
      m.tensors_.push_back(t);
    }
  }
  m.by_name_.reserve(m.tensors_.size());
  for (size_t i = 0; i < m.tensors_.size(); ++i) m.by_name_.emplace_back(m.tensors_[i].name, i);
  std::sort(m.by_name_.begin(), m.by_name_.end());
  for (size_t i = 1; i < m.by_name_.size(); ++i) {
    if (m.by_name_[i].first == m.by_name_[i - 1].first) {
      const TensorView& a = m.tensors_[m.by_name_[i - 1].second];
      const TensorView& b = m.tensors_[m.by_name_[i].second];
      throw SplitError(path + ": tensor '" + std::string(a.name) + "' appears in both " + m.parts_[a.split].name() +
                       " and " + m.parts_[b.split].name());
    }
  }
  return m;
}

const TensorView* Model::find_tensor(std::string_view name) const {
  const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                   [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == by_name_.end() || it->first != name) return nullptr;
  return &tensors_[it->second];
}

const TensorView& Model::tensor(std::string_view name) const {
  if (const TensorView* t = find_tensor(name)) return *t;
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const TensorView& t : tensors_) names.emplace_back(t.name);
  throw MetadataError(this->name() + ": tensor '" + std::string(name) + "' is missing" + did_you_mean(name, names));
}

}  // namespace strata::gguf
