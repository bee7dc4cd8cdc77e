// Small GGUF files for the reader's tests and the fuzzer's seed corpus: one valid file with a known layout, and
// one bad file per failure mode of the reader, each with the exact message it must produce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::gguf::samples {

// A valid 672-byte GGUF v3: five key/values (string, u32 alignment, u32 array, string array, bool) and two
// tensors (F32 [32, 2], Q8_0 [64]). gguf_samples.cpp lists the byte offset of every field.
std::vector<uint8_t> small_file();

// A valid file with one key, "deep", whose value nests arrays `levels` deep (the innermost holds one i32).
std::vector<uint8_t> nested_arrays_file(uint32_t levels);

struct BadFile {
  std::string name;            // what is wrong, as a file name stem
  std::vector<uint8_t> bytes;  // the file
  uint64_t byte;               // the offset the message must name
  std::string message;         // the message after "<file>: byte <offset>: "
};

// Every failure mode of the reader, built by patching small_file() (or nested_arrays_file()).
std::vector<BadFile> bad_files();

}  // namespace strata::gguf::samples
