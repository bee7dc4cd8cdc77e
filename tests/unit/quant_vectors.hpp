// Reading ggml's quantization test vectors (tests/data/quant, see its README.md) for the format tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::test {

inline std::filesystem::path quant_dir() { return std::filesystem::path(STRATA_TEST_DATA) / "quant"; }

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open test data file " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string read_text(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  return {bytes.begin(), bytes.end()};
}

inline std::vector<float> read_f32(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  if (bytes.size() % sizeof(float) != 0) throw std::runtime_error(path.string() + " is not a whole number of floats");
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// Tab-separated rows, the first being the header; each row as its fields.
inline std::vector<std::vector<std::string>> read_tsv(const std::filesystem::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream text(read_text(path));
  std::string line;
  while (std::getline(text, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::string field;
    std::istringstream cells(line);
    while (std::getline(cells, field, '\t')) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

// Empty when the two float arrays are identical bit for bit; otherwise names the first differing index.
inline std::string first_float_difference(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) {
    return "sizes differ: expected " + std::to_string(want.size()) + " values, got " + std::to_string(got.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &want[i], 4);
    std::memcpy(&b, &got[i], 4);
    if (a != b) {
      char msg[160];
      std::snprintf(msg, sizeof msg, "first difference at value %zu: expected %.9g (0x%08x), got %.9g (0x%08x)", i,
                    static_cast<double>(want[i]), a, static_cast<double>(got[i]), b);
      return msg;
    }
  }
  return {};
}

// Empty when identical; otherwise names the first differing byte and its block.
inline std::string first_byte_difference(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got,
                                         size_t block_bytes) {
  if (want.size() != got.size()) {
    return "sizes differ: expected " + std::to_string(want.size()) + " bytes, got " + std::to_string(got.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "first difference at byte %zu (block %zu, offset %zu): expected 0x%02x, got 0x%02x", i,
                    i / block_bytes, i % block_bytes, want[i], got[i]);
      return msg;
    }
  }
  return {};
}

}  // namespace strata::test
