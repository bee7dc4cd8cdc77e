#include "gguf_samples.hpp"

#include <cstring>
#include <numeric>

#include "strata/gguf.hpp"

namespace strata::gguf::samples {
namespace {

// small_file()'s layout, counted by hand from the format (the tests check the reader agrees):
//   0 magic, 4 version, 8 tensor count, 16 kv count
//   kv[0] @24  key length, @32 "general.architecture", @52 type (string), @56 length, @64 "llama"
//   kv[1] @69  key length, @77 "general.alignment", @94 type (u32), @98 value 32
//   kv[2] @102 key length, @110 "test.u32s", @119 type (array), @123 element type (u32), @127 count 3, @135 elements
//   kv[3] @147 key length, @155 "test.strings", @167 type (array), @171 element type (string), @175 count 2,
//              @183 length 1, @191 "a", @192 length 2, @200 "bc"
//   kv[4] @202 key length, @210 "test.flag", @219 type (bool), @223 value 1
//   tensor[0] @224 name length, @232 "a", @233 n_dims 2, @237 ne[0] 32, @245 ne[1] 2, @253 type F32, @257 offset 0
//   tensor[1] @265 name length, @273 "b", @274 n_dims 1, @278 ne[0] 64, @286 type Q8_0, @290 offset 256
//   data section @320: "a" 256 bytes at 0, "b" 68 bytes at 256, padded to 672
constexpr uint64_t kFileSize = 672;

template <class T>
std::vector<uint8_t> patched(std::vector<uint8_t> bytes, uint64_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
  return bytes;
}

std::vector<uint8_t> patched_text(std::vector<uint8_t> bytes, uint64_t at, std::string_view text) {
  std::memcpy(bytes.data() + at, text.data(), text.size());
  return bytes;
}

std::vector<uint8_t> truncated(std::vector<uint8_t> bytes, size_t size) {
  bytes.resize(size);
  return bytes;
}

}  // namespace

std::vector<uint8_t> small_file() {
  Writer w;
  w.set_string("general.architecture", "llama");
  w.set_alignment(32);
  const std::vector<uint32_t> u32s = {1, 2, 3};
  w.set_array("test.u32s", std::span<const uint32_t>(u32s));
  const std::vector<std::string> strings = {"a", "bc"};
  w.set_array("test.strings", std::span<const std::string>(strings));
  w.set_bool("test.flag", true);
  const uint64_t a_shape[] = {32, 2};
  const uint64_t b_shape[] = {64};
  w.add_tensor("a", GgmlType::F32, a_shape);
  w.add_tensor("b", GgmlType::Q8_0, b_shape);
  std::vector<uint8_t> a(w.tensor_bytes(0)), b(w.tensor_bytes(1));
  std::iota(a.begin(), a.end(), uint8_t{1});
  std::iota(b.begin(), b.end(), uint8_t{100});
  const std::span<const uint8_t> data[] = {a, b};
  return w.to_bytes(data);
}

std::vector<uint8_t> nested_arrays_file(uint32_t levels) {
  ArrayBuilder inner(ValueType::I32);
  inner.add_i32(7);
  for (uint32_t l = 1; l < levels; ++l) {
    ArrayBuilder outer(ValueType::Array);
    outer.add_array(inner);
    inner = std::move(outer);
  }
  Writer w;
  w.set_array("deep", inner);
  return w.to_bytes({});
}

std::vector<BadFile> bad_files() {
  const std::vector<uint8_t> good = small_file();
  const std::string size = " (size " + std::to_string(kFileSize) + ")";
  const uint64_t huge60 = uint64_t{1} << 60;  // 1152921504606846976
  const uint64_t huge50 = uint64_t{1} << 50;  // 1125899906842624
  const uint64_t huge40 = uint64_t{1} << 40;  // 1099511627776
  std::vector<BadFile> v;
  // Header.
  v.push_back({"empty", {}, 0, "magic (4 bytes) runs past the end of the file (size 0)"});
  v.push_back({"short_magic", truncated(good, 3), 0, "magic (4 bytes) runs past the end of the file (size 3)"});
  v.push_back({"bad_magic", patched_text(good, 0, "GGML"), 0,
               "bad magic \"GGML\": not a GGUF file (a GGUF file starts with \"GGUF\")"});
  v.push_back({"version_1", patched<uint32_t>(good, 4, 1), 4,
               "GGUF version 1 is not supported (it used 32-bit counts); re-convert the model with a current "
               "llama.cpp to get version 3"});
  v.push_back({"version_4", patched<uint32_t>(good, 4, 4), 4,
               "unsupported GGUF version 4 (this reader reads versions 2 and 3)"});
  v.push_back({"big_endian", patched<uint32_t>(good, 4, 0x03000000), 4,
               "version field reads 50331648: this is a big-endian GGUF file, which is not supported (convert it "
               "to little-endian)"});
  v.push_back({"truncated_header", truncated(good, 20), 16,
               "kv count (8 bytes) runs past the end of the file (size 20)"});
  v.push_back({"huge_tensor_count", patched<uint64_t>(good, 8, huge40), 8,
               "tensor count 1099511627776 (each tensor info at least 24 bytes) runs past the end of the file" + size});
  v.push_back({"huge_kv_count", patched<uint64_t>(good, 16, huge40), 16,
               "kv count 1099511627776 (each key/value at least 13 bytes) runs past the end of the file (size 672)"});
  // Key/values.
  v.push_back({"huge_key_length", patched<uint64_t>(good, 24, huge60), 24,
               "kv[0] key length 1152921504606846976 runs past the end of the file" + size});
  v.push_back({"unknown_value_type", patched<uint32_t>(good, 52, 13), 52,
               "kv[0] 'general.architecture' has unknown value type 13 (known types are 0 to 12)"});
  v.push_back({"huge_string_length", patched<uint64_t>(good, 56, huge60), 56,
               "kv[0] 'general.architecture' string length 1152921504606846976 runs past the end of the file" + size});
  v.push_back({"unknown_array_element_type", patched<uint32_t>(good, 123, 99), 123,
               "kv[2] 'test.u32s' has unknown array element type 99 (known types are 0 to 12)"});
  v.push_back({"huge_array_count", patched<uint64_t>(good, 127, huge50), 127,
               "kv[2] 'test.u32s' array count 1125899906842624 (elements of type u32, at least 4 bytes each) runs "
               "past the end of the file" + size});
  v.push_back({"huge_string_array_count", patched<uint64_t>(good, 175, huge50), 175,
               "kv[3] 'test.strings' array count 1125899906842624 (elements of type string, at least 8 bytes each) "
               "runs past the end of the file" + size});
  v.push_back({"huge_array_string_length", patched<uint64_t>(good, 183, huge60), 183,
               "kv[3] 'test.strings'[0] string length 1152921504606846976 runs past the end of the file" + size});
  v.push_back({"truncated_in_string_array", truncated(good, 201), 192,
               "kv[3] 'test.strings'[1] string length 2 runs past the end of the file (size 201)"});
  v.push_back({"bad_bool", patched<uint8_t>(good, 223, 2), 223, "kv[4] 'test.flag' bool value 2 is not 0 or 1"});
  v.push_back({"duplicate_key", patched_text(good, 210, "test.u32s"), 202,
               "kv[4] 'test.u32s' duplicate key (first at kv[2], byte 102)"});
  v.push_back({"alignment_wrong_type", patched<uint32_t>(good, 94, 5), 94,
               "general.alignment has type i32; it must be u32"});
  v.push_back({"alignment_not_power_of_two", patched<uint32_t>(good, 98, 48), 98,
               "general.alignment is 48; it must be a non-zero power of two"});
  v.push_back({"alignment_zero", patched<uint32_t>(good, 98, 0), 98,
               "general.alignment is 0; it must be a non-zero power of two"});
  v.push_back({"nested_too_deep", nested_arrays_file(kMaxArrayDepth + 1), 40 + 12 * (kMaxArrayDepth - 1),
               "kv[0] 'deep'[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0] nests arrays more than 16 levels deep"});
  // Tensor infos.
  v.push_back({"huge_tensor_name_length", patched<uint64_t>(good, 224, huge60), 224,
               "tensor[0] name length 1152921504606846976 runs past the end of the file" + size});
  v.push_back({"duplicate_tensor_name", patched_text(good, 273, "a"), 265,
               "tensor[1] 'a' duplicate name (also tensor[0])"});
  v.push_back({"too_many_dims", patched<uint32_t>(good, 233, 5), 233,
               "tensor[0] 'a' has 5 dimensions; GGUF allows at most 4"});
  v.push_back({"zero_dim", patched<uint64_t>(good, 245, 0), 245,
               "tensor[0] 'a' ne[1] is 0; every dimension must be at least 1"});
  v.push_back({"element_count_overflow", patched<uint64_t>(patched<uint64_t>(good, 237, huge40), 245, huge40), 237,
               "tensor[0] 'a' shape [1099511627776, 1099511627776] has more than 2^63-1 elements"});
  v.push_back({"unknown_type", patched<uint32_t>(good, 253, 4), 253, "tensor[0] 'a' has unknown ggml type id 4"});
  v.push_back({"unknown_type_large", patched<uint32_t>(good, 253, 1000), 253,
               "tensor[0] 'a' has unknown ggml type id 1000"});
  v.push_back({"not_whole_blocks", patched<uint64_t>(good, 278, 48), 278,
               "tensor[1] 'b' row length ne[0] = 48 is not a multiple of the q8_0 block size 32"});
  v.push_back({"truncated_in_tensor_info", truncated(good, 280), 278,
               "tensor[1] 'b' ne[0] (8 bytes) runs past the end of the file (size 280)"});
  v.push_back({"misaligned_offset", patched<uint64_t>(good, 290, 260), 290,
               "tensor[1] 'b' data offset 260 is not a multiple of the alignment 32"});
  // Tensor data.
  v.push_back({"truncated_data", truncated(good, 600), 290,
               "tensor[1] 'b' data (68 bytes at offset 256 in the data section, which starts at byte 320) runs past "
               "the end of the file (size 600)"});
  v.push_back({"offset_past_end", patched<uint64_t>(good, 290, uint64_t{1} << 62), 290,
               "tensor[1] 'b' data (68 bytes at offset 4611686018427387904 in the data section, which starts at "
               "byte 320) runs past the end of the file" + size});
  v.push_back({"byte_size_overflow",
               patched<uint64_t>(patched<uint64_t>(good, 237, uint64_t{1} << 31), 245, uint64_t{1} << 31), 257,
               "tensor[0] 'a' data (more than 2^64 bytes at offset 0 in the data section, which starts at byte "
               "320) runs past the end of the file" + size});
  v.push_back({"overlapping_tensors", patched<uint64_t>(good, 290, 224), 290,
               "tensor[1] 'b' data [224, 292) overlaps tensor[0] 'a' data [0, 256) (offsets in the data section)"});
  return v;
}

}  // namespace strata::gguf::samples
