// GGUF v2/v3 files: a zero-copy reader over an mmap (or a caller's buffer) that validates every count, length
// and offset before using it, split models (`name-00001-of-0000N.gguf`) opened as one, and a writer whose tensor
// data can be written from many threads at once.
//
// Format facts (ggml's docs/gguf.md): magic "GGUF", version u32, tensor count u64, kv count u64, the key/values,
// the tensor infos, padding to `general.alignment`, then the data section. Everything is little-endian.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/types.hpp"

namespace strata::gguf {

using format::GgmlType;

// The bytes of a file break the format. The message reads "<file>: byte <offset>: <field and problem>".
class FormatError : public Error {
 public:
  using Error::Error;
};

// A metadata key or tensor the caller needs is missing, or the key holds a value of another type.
class MetadataError : public Error {
 public:
  using Error::Error;
};

// The parts of a split model do not fit together, or one is missing.
class SplitError : public Error {
 public:
  using Error::Error;
};

// The operating system refused: open, stat, mmap, write.
class IoError : public Error {
 public:
  using Error::Error;
};

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
// Real files never nest arrays; the limit keeps a hostile file from recursing deep.
inline constexpr uint32_t kMaxArrayDepth = 16;
inline constexpr std::string_view kAlignmentKey = "general.alignment";
inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsCountKey = "split.tensors.count";

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u8", "i32", "f32", "bool", "string", "array", ...; "type <id>" for an id outside the enum.
std::string_view value_type_name(ValueType type);
// Bytes of one value of a fixed-size type; 0 for string and array.
size_t value_type_size(ValueType type);
bool is_integer(ValueType type);

namespace detail {
struct Store;
class Parser;
}  // namespace detail

class ArrayView;

// One metadata value, a view into the file's bytes; valid while its File lives.
class Value {
 public:
  ValueType type() const { return type_; }
  // Byte offset in the file of the encoded value (just after its type tag).
  uint64_t file_offset() const;
  // The encoded value as stored in the file (no type tag): what a Writer copies.
  std::span<const uint8_t> encoded() const { return {raw_, raw_size_}; }

  // Conversions; nullopt when the value is of another kind or, for integers, does not fit.
  std::optional<uint64_t> as_u64() const;  // any integer type with a non-negative value
  std::optional<int64_t> as_i64() const;   // any integer type whose value fits in i64
  std::optional<double> as_f64() const;    // f32 or f64
  std::optional<bool> as_bool() const;
  std::optional<std::string_view> as_string() const;
  std::optional<ArrayView> as_array() const;

  // For messages: "u32 5", "f32 1.5", "string \"llama\"", "array of 512 string".
  std::string describe() const;

 private:
  friend class ArrayView;
  friend class detail::Parser;

  const detail::Store* store_ = nullptr;
  const uint8_t* raw_ = nullptr;  // the encoded value
  uint64_t raw_size_ = 0;
  uint64_t count_ = 0;       // arrays: elements; strings: bytes
  uint64_t pool_begin_ = 0;  // arrays of strings or arrays: first element in the store's pool
  ValueType type_ = ValueType::U8;
  ValueType element_type_ = ValueType::U8;  // arrays only
};

// An array value: its elements by index, or all strings at once (vocabularies).
class ArrayView {
 public:
  ValueType element_type() const { return value_.element_type_; }
  uint64_t size() const { return value_.count_; }
  bool empty() const { return value_.count_ == 0; }
  // Element i (any element type); throws std::out_of_range past the end.
  Value operator[](uint64_t i) const;
  // The elements of an array of strings, viewing the file; empty for other element types.
  std::span<const std::string_view> strings() const;
  // The elements of an array of arrays; empty for other element types.
  std::span<const Value> arrays() const;
  // The little-endian bytes of an array of fixed-size elements (unaligned); empty for strings and arrays.
  std::span<const uint8_t> element_bytes() const;

  // All elements converted to T. Integer T takes any integer element type whose values fit; floating T takes
  // f32 or f64 elements. nullopt when the element type does not convert or a value does not fit.
  std::optional<std::vector<int64_t>> to_i64() const;
  std::optional<std::vector<uint64_t>> to_u64() const;
  std::optional<std::vector<double>> to_f64() const;
  std::optional<std::vector<int32_t>> to_i32() const;
  std::optional<std::vector<uint32_t>> to_u32() const;
  std::optional<std::vector<float>> to_f32() const;

 private:
  friend class Value;
  explicit ArrayView(const Value& v) : value_(v) {}
  Value value_;
};

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t file_offset;  // where the key/value starts (its key length field)
};

// A file's key/values. Getters: get_* require the key (MetadataError naming the key and what was found when it
// is missing or of the wrong type); find_* return nullopt when the key is missing and throw when it is present
// with the wrong type. Integer getters take any integer type whose value fits.
class Metadata {
 public:
  std::span<const KeyValue> entries() const;  // in file order
  const KeyValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const std::string& file_name() const;

  uint8_t get_u8(std::string_view key) const;
  int8_t get_i8(std::string_view key) const;
  uint16_t get_u16(std::string_view key) const;
  int16_t get_i16(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int32_t get_i32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;  // f32, or f64 narrowed
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::string_view get_string(std::string_view key) const;
  ArrayView get_array(std::string_view key) const;
  std::span<const std::string_view> get_string_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;

  std::optional<uint8_t> find_u8(std::string_view key) const;
  std::optional<int8_t> find_i8(std::string_view key) const;
  std::optional<uint16_t> find_u16(std::string_view key) const;
  std::optional<int16_t> find_i16(std::string_view key) const;
  std::optional<uint32_t> find_u32(std::string_view key) const;
  std::optional<int32_t> find_i32(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<float> find_f32(std::string_view key) const;
  std::optional<double> find_f64(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  std::optional<ArrayView> find_array(std::string_view key) const;
  std::optional<std::span<const std::string_view>> find_string_array(std::string_view key) const;

 private:
  friend class File;
  const detail::Store* store_ = nullptr;
};

// A tensor's info and a zero-copy view of its data.
struct TensorView {
  std::string_view name;
  GgmlType type;
  uint32_t n_dims;
  std::array<uint64_t, kMaxDims> ne;  // ggml's ne[]: ne[0] is the innermost (contiguous) dimension; unused = 1
  uint64_t n_elements;
  uint64_t n_bytes;
  const uint8_t* data;
  uint64_t file_offset;  // absolute offset of the data in its file
  uint32_t split;        // which part of a split model holds it (0 for a single file)

  std::span<const uint64_t> shape() const { return {ne.data(), n_dims}; }
  std::span<const uint8_t> bytes() const { return {data, n_bytes}; }
};

// One GGUF file, validated when opened. Views (strings, tensors) stay valid while the File lives; a File may
// be moved. Reading is thread-safe.
class File {
 public:
  // Maps the file read-only; only the header pages are read.
  static File open(const std::string& path);
  // Reads a GGUF held in memory, viewing the caller's bytes (they must outlive the File).
  static File from_memory(std::span<const uint8_t> bytes, std::string name);
  // Same, owning the bytes.
  static File from_memory(std::vector<uint8_t> bytes, std::string name);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::string& name() const;
  uint32_t version() const;
  uint32_t alignment() const;
  uint64_t size() const;
  uint64_t data_offset() const;  // where the data section starts (tensor offsets are relative to it)
  std::span<const uint8_t> bytes() const;
  const Metadata& metadata() const;
  std::span<const TensorView> tensors() const;
  const TensorView* find_tensor(std::string_view name) const;

 private:
  File();
  std::unique_ptr<detail::Store> store_;
};

// The parts of a split model's file name: `<prefix>-00002-of-00005.gguf` -> {prefix, 2, 5}.
struct SplitName {
  std::string prefix;
  uint32_t index;  // 1-based, as in the file name
  uint32_t count;
};
std::optional<SplitName> parse_split_path(std::string_view path);
std::string split_path(std::string_view prefix, uint32_t index, uint32_t count);

// A model: one GGUF file, or every part of a split model opened from its first part. Metadata is the first
// part's (split models keep it there); tensors are those of all parts, each knowing its part.
class Model {
 public:
  static Model open(const std::string& path);

  size_t part_count() const { return parts_.size(); }
  const File& part(size_t i) const { return parts_.at(i); }
  const Metadata& metadata() const { return parts_.front().metadata(); }
  const std::string& name() const { return parts_.front().name(); }
  std::span<const TensorView> tensors() const { return tensors_; }
  const TensorView* find_tensor(std::string_view name) const;
  // A tensor the caller needs: MetadataError naming it (and a near name) when it is missing.
  const TensorView& tensor(std::string_view name) const;

 private:
  std::vector<File> parts_;
  std::vector<TensorView> tensors_;
  std::vector<std::pair<std::string_view, size_t>> by_name_;  // sorted by name
};

// An array value under construction, elements encoded as they are added. Arrays may hold arrays.
class ArrayBuilder {
 public:
  explicit ArrayBuilder(ValueType element_type);

  // Each throws std::invalid_argument when the element type differs.
  ArrayBuilder& add_u8(uint8_t v);
  ArrayBuilder& add_i8(int8_t v);
  ArrayBuilder& add_u16(uint16_t v);
  ArrayBuilder& add_i16(int16_t v);
  ArrayBuilder& add_u32(uint32_t v);
  ArrayBuilder& add_i32(int32_t v);
  ArrayBuilder& add_u64(uint64_t v);
  ArrayBuilder& add_i64(int64_t v);
  ArrayBuilder& add_f32(float v);
  ArrayBuilder& add_f64(double v);
  ArrayBuilder& add_bool(bool v);
  ArrayBuilder& add_string(std::string_view v);
  ArrayBuilder& add_array(const ArrayBuilder& v);
  // Copies a value read from a file (an element of another array, say), bytes as they are.
  ArrayBuilder& add(const Value& v);

  ValueType element_type() const { return element_type_; }
  uint64_t size() const { return count_; }
  // The value as GGUF stores it: element type, count, elements.
  std::vector<uint8_t> encode() const;

 private:
  void expect(ValueType t) const;
  template <class T>
  ArrayBuilder& add_fixed(ValueType type, T v);
  ValueType element_type_;
  uint64_t count_ = 0;
  std::vector<uint8_t> elements_;
};

// Writes a GGUF: set the metadata and add the tensor infos, then either open() a file, which writes the header
// and sizes the file, and write each tensor's bytes (from any number of threads at once), then close(); or
// build the whole file in memory with to_bytes(). Keys are written in the order first set; setting a key again
// replaces its value in place.
class Writer {
 public:
  Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  void set_version(uint32_t version);  // 2 or 3 (the default); the layout is the same
  void set_u8(std::string_view key, uint8_t v);
  void set_i8(std::string_view key, int8_t v);
  void set_u16(std::string_view key, uint16_t v);
  void set_i16(std::string_view key, int16_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_array(std::string_view key, const ArrayBuilder& v);
  void set_array(std::string_view key, std::span<const uint8_t> v);
  void set_array(std::string_view key, std::span<const int8_t> v);
  void set_array(std::string_view key, std::span<const uint16_t> v);
  void set_array(std::string_view key, std::span<const int16_t> v);
  void set_array(std::string_view key, std::span<const uint32_t> v);
  void set_array(std::string_view key, std::span<const int32_t> v);
  void set_array(std::string_view key, std::span<const uint64_t> v);
  void set_array(std::string_view key, std::span<const int64_t> v);
  void set_array(std::string_view key, std::span<const float> v);
  void set_array(std::string_view key, std::span<const double> v);
  void set_array(std::string_view key, std::span<const std::string> v);
  void set_array(std::string_view key, std::span<const std::string_view> v);
  // Copies a value read from another file, bytes as they are.
  void set_value(std::string_view key, const Value& v);
  // Sets general.alignment (u32); throws std::invalid_argument unless a non-zero power of two.
  void set_alignment(uint32_t alignment);
  bool remove(std::string_view key);

  // Adds a tensor info; returns its index. Throws std::invalid_argument for a duplicate name, more than 4 or
  // zero dimensions of size 0, or ne[0] not a multiple of the type's block size.
  size_t add_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne);
  size_t tensor_count() const { return tensors_.size(); }

  // The layout, computed from the current metadata and tensors on first use after a change; fixed by open(),
  // after which these are safe to call from any thread.
  uint32_t alignment() const;
  uint64_t data_offset() const;
  uint64_t tensor_offset(size_t i) const;  // relative to the data section, as the header stores it
  uint64_t tensor_file_offset(size_t i) const;
  uint64_t tensor_bytes(size_t i) const;
  uint64_t file_size() const;
  // Bytes [0, data_offset()): header, key/values, tensor infos and padding.
  std::vector<uint8_t> header() const;

  // Creates (truncates) the file, writes the header and sizes the file to file_size().
  void open(const std::string& path);
  // Writes all of tensor i, or a chunk of it at `offset` within the tensor; thread-safe (pwrite).
  void write_tensor(size_t i, std::span<const uint8_t> bytes) const;
  void write_tensor_chunk(size_t i, uint64_t offset, std::span<const uint8_t> bytes) const;
  // Closes the file; IoError when a tensor was not written in full or the close fails.
  void close();

  // The whole file in memory; tensor_data[i] must be tensor i's bytes.
  std::vector<uint8_t> to_bytes(std::span<const std::span<const uint8_t>> tensor_data) const;

 private:
  struct Entry {
    std::string key;
    ValueType type;
    std::vector<uint8_t> value;
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    uint32_t n_dims;
    std::array<uint64_t, kMaxDims> ne;
    uint64_t n_bytes;
  };
  struct Layout {
    uint32_t alignment = kDefaultAlignment;
    uint64_t data_offset = 0;
    uint64_t file_size = 0;
    std::vector<uint64_t> offsets;
  };

  void set_encoded(std::string_view key, ValueType type, std::vector<uint8_t> value);
  void check_not_open() const;
  void check_index(size_t i) const;
  const Layout& layout() const;

  uint32_t version_ = 3;
  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
  mutable std::optional<Layout> layout_;
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<std::atomic<uint64_t>[]> written_;
};

}  // namespace strata::gguf
