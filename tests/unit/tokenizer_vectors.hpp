// llama.cpp's tokenizer test vectors (tests/data/vocab/*.inp, *.out): the format test-tokenizer-0 reads.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "strata/tokenizer.hpp"

namespace strata::test {

inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The .inp file: cases joined by "\n__ggml_vocab_test__\n", which also ends the file.
inline std::vector<std::string> read_vector_inputs(const std::filesystem::path& path) {
  const std::string text = read_file_bytes(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find(sep, pos);
    if (end == std::string::npos) throw std::runtime_error(path.string() + ": the last case is not terminated");
    cases.push_back(text.substr(pos, end - pos));
    pos = end + sep.size();
  }
  return cases;
}

// The .out file: one line per case, ids separated by spaces (after a leading space); an empty line for no ids.
inline std::vector<std::vector<TokenId>> read_vector_outputs(const std::filesystem::path& path) {
  std::istringstream in(read_file_bytes(path));
  std::vector<std::vector<TokenId>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ids(line);
    std::vector<TokenId> v;
    long long id;
    while (ids >> id) v.push_back(static_cast<TokenId>(id));
    out.push_back(std::move(v));
  }
  return out;
}

inline std::string format_ids(const std::vector<TokenId>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// The bytes of a string with control characters and non-ASCII bytes escaped, for failure messages.
inline std::string escape_bytes(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b < 0x20 || b >= 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::filesystem::path vocab_path(const std::string& name) {
  return std::filesystem::path(STRATA_TEST_DATA) / "vocab" / ("ggml-vocab-" + name + ".gguf");
}

}  // namespace strata::test
