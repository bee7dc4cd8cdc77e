// Reads and validates a GGUF file's header, key/values and tensor infos. Every count, length and offset is
// checked against the bytes that remain before it is used, so a hostile file yields a FormatError naming the
// file, the byte offset and the field, never a wild read or a huge allocation.
#include <algorithm>
#include <numeric>
#include <string>

#include "store.hpp"

namespace strata::gguf::detail {
namespace {

// Smallest encodings, for bounding counts before looping: key length + empty key + type + a u8 value;
// name length + empty name + n_dims + type + offset; string length; array element type + count.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;
constexpr uint32_t kLastValueType = static_cast<uint32_t>(ValueType::F64);

std::string str(uint64_t v) { return std::to_string(v); }

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// The magic as printable text, for "bad magic" messages.
std::string printable(const uint8_t* p, size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') {
      out += static_cast<char>(p[i]);
    } else {
      out += "\\x";
      out += hex[p[i] >> 4];
      out += hex[p[i] & 15];
    }
  }
  return out + "\"";
}

uint64_t min_encoded_bytes(ValueType t) {
  if (t == ValueType::String) return kMinStringBytes;
  if (t == ValueType::Array) return kMinArrayBytes;
  return value_type_size(t);
}

}  // namespace

class Parser {
 public:
  explicit Parser(Store& store) : s_(store) {}

  void run() {
    read_header();
    read_kvs();
    read_alignment();
    read_tensor_infos();
    place_tensor_data();
  }

 private:
  uint64_t remaining() const { return s_.size - pos_; }
  const uint8_t* here() const { return s_.base + pos_; }

  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw FormatError(s_.name + ": byte " + str(at) + ": " + what);
  }
  [[noreturn]] void past_end(uint64_t at, const std::string& what) const {
    fail(at, what + " runs past the end of the file (size " + str(s_.size) + ")");
  }

  // Reads a fixed-size field; `field()` names it, built only for the message.
  template <class T, class Field>
  T read(const Field& field) {
    if (sizeof(T) > remaining()) past_end(pos_, field() + " (" + str(sizeof(T)) + " bytes)");
    const T v = load<T>(here());
    pos_ += sizeof(T);
    return v;
  }

  // Reads a length-prefixed string as a view into the file.
  template <class Field>
  std::string_view read_string(const Field& field) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>([&] { return field() + " length"; });
    if (len > remaining()) past_end(at, field() + " length " + str(len));
    const std::string_view s(reinterpret_cast<const char*>(here()), len);
    pos_ += len;
    return s;
  }

  // "kv[3] 'tokenizer.ggml.tokens'[17]": the key/value being read and, inside arrays, the element.
  std::string kv_label() const {
    std::string s = "kv[" + str(kv_) + "]";
    if (key_known_) s += " " + quoted(key_);
    for (uint32_t d = 0; d < depth_; ++d) s += "[" + str(index_[d]) + "]";
    return s;
  }

  void read_header() {
    if (s_.size >= 4 && load<uint32_t>(s_.base) != kMagic) {
      fail(0, "bad magic " + printable(s_.base, 4) + ": not a GGUF file (a GGUF file starts with \"GGUF\")");
    }
    read<uint32_t>([] { return std::string("magic"); });
    const uint64_t version_at = pos_;
    const uint32_t version = read<uint32_t>([] { return std::string("version"); });
    if (version != 2 && version != 3) {
      const uint32_t swapped = __builtin_bswap32(version);
      if (swapped == 2 || swapped == 3) {
        fail(version_at, "version field reads " + str(version) +
                             ": this is a big-endian GGUF file, which is not supported (convert it to little-endian)");
      }
      if (version == 1) {
        fail(version_at, "GGUF version 1 is not supported (it used 32-bit counts); re-convert the model with a "
                         "current llama.cpp to get version 3");
      }
      fail(version_at, "unsupported GGUF version " + str(version) + " (this reader reads versions 2 and 3)");
    }
    s_.version = version;
    const uint64_t tensors_at = pos_;
    n_tensors_ = read<uint64_t>([] { return std::string("tensor count"); });
    const uint64_t kvs_at = pos_;
    n_kvs_ = read<uint64_t>([] { return std::string("kv count"); });
    // Bound both counts by the bytes left before reserving or looping.
    if (n_kvs_ > remaining() / kMinKvBytes) {
      past_end(kvs_at, "kv count " + str(n_kvs_) + " (each key/value at least " + str(kMinKvBytes) + " bytes)");
    }
    if (n_tensors_ > remaining() / kMinTensorInfoBytes) {
      past_end(tensors_at, "tensor count " + str(n_tensors_) + " (each tensor info at least " +
                               str(kMinTensorInfoBytes) + " bytes)");
    }
  }

  void read_kvs() {
    s_.kvs.reserve(n_kvs_);
    s_.kv_index.reserve(n_kvs_);
    for (kv_ = 0; kv_ < n_kvs_; ++kv_) {
      const uint64_t start = pos_;
      key_known_ = false;
      key_ = read_string([&] { return kv_label() + " key"; });
      key_known_ = true;
      const auto [it, inserted] = s_.kv_index.emplace(key_, static_cast<uint32_t>(kv_));
      if (!inserted) {
        const KeyValue& first = s_.kvs[it->second];
        fail(start, kv_label() + " duplicate key (first at kv[" + str(it->second) + "], byte " +
                        str(first.file_offset) + ")");
      }
      const uint64_t type_at = pos_;
      const uint32_t type = read<uint32_t>([&] { return kv_label() + " value type"; });
      if (type > kLastValueType) {
        fail(type_at, kv_label() + " has unknown value type " + str(type) + " (known types are 0 to " +
                          str(kLastValueType) + ")");
      }
      const Value v = read_value(static_cast<ValueType>(type));
      s_.kvs.push_back(KeyValue{key_, v, start});
    }
  }

  Value read_value(ValueType type) {
    Value v;
    v.store_ = &s_;
    v.type_ = type;
    v.raw_ = here();
    const uint64_t start = pos_;
    if (type == ValueType::String) {
      v.count_ = read_string([&] { return kv_label() + " string"; }).size();
    } else if (type == ValueType::Array) {
      read_array(v);
    } else {
      const uint64_t n = value_type_size(type);
      if (n > remaining()) past_end(pos_, kv_label() + " " + std::string(value_type_name(type)) + " value");
      if (type == ValueType::Bool) check_bool(pos_);
      pos_ += n;
    }
    v.raw_size_ = pos_ - start;
    return v;
  }

  void check_bool(uint64_t at) const {
    const uint8_t b = s_.base[at];
    if (b > 1) fail(at, kv_label() + " bool value " + str(b) + " is not 0 or 1");
  }

  void read_array(Value& v) {
    const uint64_t type_at = pos_;
    const uint32_t et = read<uint32_t>([&] { return kv_label() + " array element type"; });
    if (et > kLastValueType) {
      fail(type_at, kv_label() + " has unknown array element type " + str(et) + " (known types are 0 to " +
                        str(kLastValueType) + ")");
    }
    const ValueType element = static_cast<ValueType>(et);
    const uint64_t count_at = pos_;
    const uint64_t count = read<uint64_t>([&] { return kv_label() + " array count"; });
    const uint64_t min_bytes = min_encoded_bytes(element);
    if (count > remaining() / min_bytes) {
      past_end(count_at, kv_label() + " array count " + str(count) + " (elements of type " +
                             std::string(value_type_name(element)) + ", at least " + str(min_bytes) + " bytes each)");
    }
    v.element_type_ = element;
    v.count_ = count;
    if (element == ValueType::String) {
      v.pool_begin_ = s_.string_pool.size();
      s_.string_pool.reserve(s_.string_pool.size() + count);
      ++depth_;
      for (uint64_t i = 0; i < count; ++i) {
        index_[depth_ - 1] = i;
        s_.string_pool.push_back(read_string([&] { return kv_label() + " string"; }));
      }
      --depth_;
    } else if (element == ValueType::Array) {
      if (depth_ + 1 >= kMaxArrayDepth) {
        fail(type_at, kv_label() + " nests arrays more than " + str(kMaxArrayDepth) + " levels deep");
      }
      // The elements take a contiguous run of the pool; their own elements are appended after it.
      const uint64_t begin = s_.array_pool.size();
      v.pool_begin_ = begin;
      s_.array_pool.resize(begin + count);
      ++depth_;
      for (uint64_t i = 0; i < count; ++i) {
        index_[depth_ - 1] = i;
        const Value element_value = read_value(ValueType::Array);
        s_.array_pool[begin + i] = element_value;
      }
      --depth_;
    } else {
      if (element == ValueType::Bool) {
        ++depth_;
        for (uint64_t i = 0; i < count; ++i) {
          index_[depth_ - 1] = i;
          check_bool(pos_ + i);
        }
        --depth_;
      }
      pos_ += count * min_bytes;
    }
  }

  void read_alignment() {
    const auto it = s_.kv_index.find(kAlignmentKey);
    if (it == s_.kv_index.end()) return;
    const KeyValue& kv = s_.kvs[it->second];
    const uint64_t value_at = kv.value.file_offset();
    if (kv.value.type() != ValueType::U32) {
      fail(value_at - 4, std::string(kAlignmentKey) + " has type " + std::string(value_type_name(kv.value.type())) +
                             "; it must be u32");
    }
    const uint32_t a = load<uint32_t>(kv.value.encoded().data());
    if (a == 0 || (a & (a - 1)) != 0) {
      fail(value_at, std::string(kAlignmentKey) + " is " + str(a) + "; it must be a non-zero power of two");
    }
    s_.alignment = a;
  }

  std::string tensor_label(uint64_t i, std::string_view name, bool name_known) const {
    std::string s = "tensor[" + str(i) + "]";
    if (name_known) s += " " + quoted(name);
    return s;
  }

  void read_tensor_infos() {
    s_.tensors.reserve(n_tensors_);
    s_.tensor_index.reserve(n_tensors_);
    offset_at_.reserve(n_tensors_);
    relative_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      const uint64_t start = pos_;
      const std::string_view name = read_string([&] { return tensor_label(i, {}, false) + " name"; });
      const auto label = [&] { return tensor_label(i, name, true); };
      const auto [it, inserted] = s_.tensor_index.emplace(name, static_cast<uint32_t>(i));
      if (!inserted) fail(start, label() + " duplicate name (also tensor[" + str(it->second) + "])");

      const uint64_t dims_count_at = pos_;
      const uint32_t n_dims = read<uint32_t>([&] { return label() + " dimension count"; });
      if (n_dims > kMaxDims) {
        fail(dims_count_at, label() + " has " + str(n_dims) + " dimensions; GGUF allows at most " + str(kMaxDims));
      }
      const uint64_t dims_at = pos_;
      TensorView t{};
      t.name = name;
      t.n_dims = n_dims;
      t.ne.fill(1);
      for (uint32_t d = 0; d < n_dims; ++d) {
        t.ne[d] = read<uint64_t>([&] { return label() + " ne[" + str(d) + "]"; });
      }
      check_shape(t, dims_at, label);

      const uint64_t type_at = pos_;
      const uint32_t type_id = read<uint32_t>([&] { return label() + " type"; });
      const std::optional<format::TypeTraits> traits = format::type_traits(type_id);
      if (!traits) fail(type_at, label() + " has unknown ggml type id " + str(type_id));
      t.type = traits->type;
      if (t.ne[0] % traits->block_elems != 0) {
        fail(dims_at, label() + " row length ne[0] = " + str(t.ne[0]) + " is not a multiple of the " +
                          std::string(traits->name) + " block size " + str(traits->block_elems));
      }
      // Up to 8 bytes per element (f64, i64) times up to 2^63-1 elements can overflow: an overflowing size is
      // marked here and reported as data past the end of the file below.
      if (__builtin_mul_overflow(t.n_elements / traits->block_elems, uint64_t{traits->block_bytes}, &t.n_bytes)) {
        t.n_bytes = UINT64_MAX;
      }

      const uint64_t offset_at = pos_;
      const uint64_t offset = read<uint64_t>([&] { return label() + " data offset"; });
      if (offset % s_.alignment != 0) {
        fail(offset_at, label() + " data offset " + str(offset) + " is not a multiple of the alignment " +
                            str(s_.alignment));
      }
      s_.tensors.push_back(t);
      offset_at_.push_back(offset_at);
      relative_.push_back(offset);
    }
  }

  template <class Label>
  void check_shape(TensorView& t, uint64_t dims_at, const Label& label) const {
    uint64_t n = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      if (t.ne[d] == 0) {
        fail(dims_at + 8 * d, label() + " ne[" + str(d) + "] is 0; every dimension must be at least 1");
      }
      overflow = overflow || __builtin_mul_overflow(n, t.ne[d], &n) || n > uint64_t{INT64_MAX};
    }
    if (overflow) {
      std::string shape;
      for (uint32_t d = 0; d < t.n_dims; ++d) shape += (d ? ", " : "") + str(t.ne[d]);
      fail(dims_at, label() + " shape [" + shape + "] has more than 2^63-1 elements");
    }
    t.n_elements = n;
  }

  // The data section starts at the first aligned byte after the infos. A file without tensors may end before
  // it (llama.cpp's vocab-only files do).
  void place_tensor_data() {
    const uint64_t a = s_.alignment;
    s_.data_offset = pos_ + (a - pos_ % a) % a;
    const uint64_t data = s_.data_offset;
    for (size_t i = 0; i < s_.tensors.size(); ++i) {
      TensorView& t = s_.tensors[i];
      const uint64_t rel = relative_[i];
      uint64_t end = 0;
      const bool outside = t.n_bytes == UINT64_MAX || __builtin_add_overflow(data, rel, &end) ||
                           __builtin_add_overflow(end, t.n_bytes, &end) || end > s_.size;
      if (outside) {
        const std::string bytes = t.n_bytes == UINT64_MAX ? "more than 2^64" : str(t.n_bytes);
        past_end(offset_at_[i], tensor_label(i, t.name, true) + " data (" + bytes + " bytes at offset " + str(rel) +
                                    " in the data section, which starts at byte " + str(data) + ")");
      }
      t.file_offset = data + rel;
      t.data = s_.base + t.file_offset;
      t.split = 0;
    }
    check_overlaps();
  }

  void check_overlaps() const {
    std::vector<uint32_t> order(s_.tensors.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return relative_[a] < relative_[b]; });
    for (size_t k = 1; k < order.size(); ++k) {
      const uint32_t prev = order[k - 1], cur = order[k];
      const uint64_t prev_end = relative_[prev] + s_.tensors[prev].n_bytes;
      if (relative_[cur] < prev_end) {
        const auto range = [&](uint32_t i) {
          return "[" + str(relative_[i]) + ", " + str(relative_[i] + s_.tensors[i].n_bytes) + ")";
        };
        fail(offset_at_[cur], tensor_label(cur, s_.tensors[cur].name, true) + " data " + range(cur) + " overlaps " +
                                  tensor_label(prev, s_.tensors[prev].name, true) + " data " + range(prev) +
                                  " (offsets in the data section)");
      }
    }
  }

  Store& s_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kvs_ = 0;

  // Where we are, for messages.
  uint64_t kv_ = 0;
  std::string_view key_;
  bool key_known_ = false;
  uint32_t depth_ = 0;
  uint64_t index_[kMaxArrayDepth] = {};

  std::vector<uint64_t> offset_at_;  // byte offset of each tensor's offset field
  std::vector<uint64_t> relative_;   // each tensor's offset in the data section
};

void Store::parse() { Parser(*this).run(); }

}  // namespace strata::gguf::detail
