// Writes GGUF files: metadata and tensor infos first, then each tensor's bytes at its aligned offset, from as many
// threads as the caller likes (pwrite needs no shared file position), so a large model never sits in memory.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "encode.hpp"
#include "strata/gguf.hpp"

namespace strata::gguf {
namespace {

constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;

uint64_t align_up(uint64_t v, uint64_t a) { return v + (a - v % a) % a; }

bool power_of_two(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

void pwrite_all(int fd, const std::string& path, const uint8_t* p, uint64_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError(path + ": cannot write " + std::to_string(n) + " bytes at byte " + std::to_string(offset) + ": " +
                    std::strerror(errno));
    }
    p += w;
    n -= static_cast<uint64_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

template <class T>
std::vector<uint8_t> encode_scalar(T v) {
  std::vector<uint8_t> out;
  detail::append<T>(out, v);
  return out;
}

template <class T>
std::vector<uint8_t> encode_numbers(ValueType element, std::span<const T> v) {
  std::vector<uint8_t> out;
  out.reserve(12 + v.size_bytes());
  detail::append<uint32_t>(out, static_cast<uint32_t>(element));
  detail::append<uint64_t>(out, v.size());
  detail::append_bytes(out, v.data(), v.size_bytes());
  return out;
}

template <class S>
std::vector<uint8_t> encode_strings(std::span<const S> v) {
  std::vector<uint8_t> out;
  detail::append<uint32_t>(out, static_cast<uint32_t>(ValueType::String));
  detail::append<uint64_t>(out, v.size());
  for (const S& s : v) detail::append_string(out, s);
  return out;
}

}  // namespace

Writer::Writer() = default;

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

void Writer::check_not_open() const {
  if (fd_ >= 0 || written_) throw std::logic_error("GGUF writer: the layout is fixed once open() was called");
}

void Writer::check_index(size_t i) const {
  if (i >= tensors_.size()) {
    throw std::out_of_range("GGUF writer: tensor index " + std::to_string(i) + " out of range (" +
                            std::to_string(tensors_.size()) + " tensors)");
  }
}

void Writer::set_version(uint32_t version) {
  check_not_open();
  if (version != 2 && version != 3) {
    throw std::invalid_argument("GGUF writer: version " + std::to_string(version) + " (only 2 and 3 are written)");
  }
  version_ = version;
}

void Writer::set_encoded(std::string_view key, ValueType type, std::vector<uint8_t> value) {
  check_not_open();
  layout_.reset();
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.type = type;
      e.value = std::move(value);
      return;
    }
  }
  entries_.push_back(Entry{std::string(key), type, std::move(value)});
}

void Writer::set_u8(std::string_view key, uint8_t v) { set_encoded(key, ValueType::U8, encode_scalar(v)); }
void Writer::set_i8(std::string_view key, int8_t v) { set_encoded(key, ValueType::I8, encode_scalar(v)); }
void Writer::set_u16(std::string_view key, uint16_t v) { set_encoded(key, ValueType::U16, encode_scalar(v)); }
void Writer::set_i16(std::string_view key, int16_t v) { set_encoded(key, ValueType::I16, encode_scalar(v)); }
void Writer::set_u32(std::string_view key, uint32_t v) { set_encoded(key, ValueType::U32, encode_scalar(v)); }
void Writer::set_i32(std::string_view key, int32_t v) { set_encoded(key, ValueType::I32, encode_scalar(v)); }
void Writer::set_u64(std::string_view key, uint64_t v) { set_encoded(key, ValueType::U64, encode_scalar(v)); }
void Writer::set_i64(std::string_view key, int64_t v) { set_encoded(key, ValueType::I64, encode_scalar(v)); }
void Writer::set_f32(std::string_view key, float v) { set_encoded(key, ValueType::F32, encode_scalar(v)); }
void Writer::set_f64(std::string_view key, double v) { set_encoded(key, ValueType::F64, encode_scalar(v)); }
void Writer::set_bool(std::string_view key, bool v) {
  set_encoded(key, ValueType::Bool, encode_scalar<uint8_t>(v ? 1 : 0));
}

void Writer::set_string(std::string_view key, std::string_view v) {
  std::vector<uint8_t> out;
  detail::append_string(out, v);
  set_encoded(key, ValueType::String, std::move(out));
}

void Writer::set_array(std::string_view key, const ArrayBuilder& v) { set_encoded(key, ValueType::Array, v.encode()); }
void Writer::set_array(std::string_view key, std::span<const uint8_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::U8, v));
}
void Writer::set_array(std::string_view key, std::span<const int8_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::I8, v));
}
void Writer::set_array(std::string_view key, std::span<const uint16_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::U16, v));
}
void Writer::set_array(std::string_view key, std::span<const int16_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::I16, v));
}
void Writer::set_array(std::string_view key, std::span<const uint32_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::U32, v));
}
void Writer::set_array(std::string_view key, std::span<const int32_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::I32, v));
}
void Writer::set_array(std::string_view key, std::span<const uint64_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::U64, v));
}
void Writer::set_array(std::string_view key, std::span<const int64_t> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::I64, v));
}
void Writer::set_array(std::string_view key, std::span<const float> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::F32, v));
}
void Writer::set_array(std::string_view key, std::span<const double> v) {
  set_encoded(key, ValueType::Array, encode_numbers(ValueType::F64, v));
}
void Writer::set_array(std::string_view key, std::span<const std::string> v) {
  set_encoded(key, ValueType::Array, encode_strings(v));
}
void Writer::set_array(std::string_view key, std::span<const std::string_view> v) {
  set_encoded(key, ValueType::Array, encode_strings(v));
}

void Writer::set_value(std::string_view key, const Value& v) {
  const std::span<const uint8_t> bytes = v.encoded();
  set_encoded(key, v.type(), std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

void Writer::set_alignment(uint32_t alignment) {
  if (!power_of_two(alignment)) {
    throw std::invalid_argument("GGUF writer: alignment " + std::to_string(alignment) +
                                " is not a non-zero power of two");
  }
  set_u32(kAlignmentKey, alignment);
}

bool Writer::remove(std::string_view key) {
  check_not_open();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.erase(it);
      layout_.reset();
      return true;
    }
  }
  return false;
}

size_t Writer::add_tensor(std::string_view name, GgmlType type, std::span<const uint64_t> ne) {
  check_not_open();
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("GGUF writer: tensor '" + std::string(name) + "': " + why);
  };
  for (const Tensor& t : tensors_) {
    if (t.name == name) fail("duplicate name");
  }
  if (ne.size() > kMaxDims) fail(std::to_string(ne.size()) + " dimensions (at most 4)");
  Tensor t{std::string(name), type, static_cast<uint32_t>(ne.size()), {1, 1, 1, 1}, 0};
  uint64_t n = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] == 0) fail("ne[" + std::to_string(d) + "] is 0");
    if (__builtin_mul_overflow(n, ne[d], &n) || n > uint64_t{INT64_MAX}) fail("too many elements");
    t.ne[d] = ne[d];
  }
  const format::TypeTraits& traits = format::traits(type);
  if (t.ne[0] % traits.block_elems != 0) {
    fail("ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " + std::string(traits.name) +
         " block size " + std::to_string(traits.block_elems));
  }
  if (__builtin_mul_overflow(n / traits.block_elems, uint64_t{traits.block_bytes}, &t.n_bytes)) {
    fail("byte size overflows");
  }
  layout_.reset();
  tensors_.push_back(std::move(t));
  return tensors_.size() - 1;
}

const Writer::Layout& Writer::layout() const {
  if (layout_) return *layout_;
  Layout l;
  for (const Entry& e : entries_) {
    if (e.key != kAlignmentKey) continue;
    uint32_t a = 0;
    if (e.type == ValueType::U32) std::memcpy(&a, e.value.data(), sizeof a);
    if (e.type != ValueType::U32 || !power_of_two(a)) {
      throw std::invalid_argument("GGUF writer: general.alignment must be a u32 power of two");
    }
    l.alignment = a;
  }
  uint64_t header = kHeaderBytes;
  for (const Entry& e : entries_) header += 8 + e.key.size() + 4 + e.value.size();
  for (const Tensor& t : tensors_) header += 8 + t.name.size() + 4 + 8 * uint64_t{t.n_dims} + 4 + 8;
  l.data_offset = align_up(header, l.alignment);
  uint64_t offset = 0;
  l.offsets.reserve(tensors_.size());
  for (const Tensor& t : tensors_) {
    l.offsets.push_back(offset);
    offset = align_up(offset + t.n_bytes, l.alignment);
  }
  l.file_size = l.data_offset + offset;
  layout_ = std::move(l);
  return *layout_;
}

uint32_t Writer::alignment() const { return layout().alignment; }
uint64_t Writer::data_offset() const { return layout().data_offset; }
uint64_t Writer::file_size() const { return layout().file_size; }

uint64_t Writer::tensor_offset(size_t i) const {
  check_index(i);
  return layout().offsets[i];
}

uint64_t Writer::tensor_file_offset(size_t i) const {
  check_index(i);
  const Layout& l = layout();
  return l.data_offset + l.offsets[i];
}

uint64_t Writer::tensor_bytes(size_t i) const {
  check_index(i);
  return tensors_[i].n_bytes;
}

std::vector<uint8_t> Writer::header() const {
  const Layout& l = layout();
  std::vector<uint8_t> out;
  out.reserve(l.data_offset);
  detail::append<uint32_t>(out, kMagic);
  detail::append<uint32_t>(out, version_);
  detail::append<uint64_t>(out, tensors_.size());
  detail::append<uint64_t>(out, entries_.size());
  for (const Entry& e : entries_) {
    detail::append_string(out, e.key);
    detail::append<uint32_t>(out, static_cast<uint32_t>(e.type));
    detail::append_bytes(out, e.value.data(), e.value.size());
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    detail::append_string(out, t.name);
    detail::append<uint32_t>(out, t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) detail::append<uint64_t>(out, t.ne[d]);
    detail::append<uint32_t>(out, static_cast<uint32_t>(t.type));
    detail::append<uint64_t>(out, l.offsets[i]);
  }
  out.resize(l.data_offset, 0);
  return out;
}

void Writer::open(const std::string& path) {
  check_not_open();
  const Layout& l = layout();
  const std::vector<uint8_t> head = header();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(path + ": cannot create: " + std::strerror(errno));
  fd_ = fd;
  path_ = path;
  written_ = std::make_unique<std::atomic<uint64_t>[]>(tensors_.size());
  pwrite_all(fd_, path_, head.data(), head.size(), 0);
  // Sizing the file up front leaves holes the tensor writes fill in any order.
  if (::ftruncate(fd_, static_cast<off_t>(l.file_size)) != 0) {
    throw IoError(path_ + ": cannot size the file to " + std::to_string(l.file_size) + " bytes: " +
                  std::strerror(errno));
  }
}

void Writer::write_tensor(size_t i, std::span<const uint8_t> bytes) const {
  check_index(i);
  if (bytes.size() != tensors_[i].n_bytes) {
    throw std::invalid_argument("GGUF writer: tensor '" + tensors_[i].name + "' takes " +
                                std::to_string(tensors_[i].n_bytes) + " bytes, got " + std::to_string(bytes.size()));
  }
  write_tensor_chunk(i, 0, bytes);
}

void Writer::write_tensor_chunk(size_t i, uint64_t offset, std::span<const uint8_t> bytes) const {
  check_index(i);
  if (fd_ < 0) throw std::logic_error("GGUF writer: open() a file before writing tensors");
  const uint64_t n = tensors_[i].n_bytes;
  if (offset > n || bytes.size() > n - offset) {
    throw std::invalid_argument("GGUF writer: tensor '" + tensors_[i].name + "': chunk of " +
                                std::to_string(bytes.size()) + " bytes at " + std::to_string(offset) +
                                " runs past its " + std::to_string(n) + " bytes");
  }
  pwrite_all(fd_, path_, bytes.data(), bytes.size(), layout_->data_offset + layout_->offsets[i] + offset);
  written_[i].fetch_add(bytes.size(), std::memory_order_relaxed);
}

void Writer::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  std::string incomplete;
  for (size_t i = 0; i < tensors_.size() && incomplete.empty(); ++i) {
    const uint64_t w = written_[i].load();
    if (w != tensors_[i].n_bytes) {
      incomplete = "tensor '" + tensors_[i].name + "' got " + std::to_string(w) + " of its " +
                   std::to_string(tensors_[i].n_bytes) + " bytes";
    }
  }
  if (::close(fd) != 0) throw IoError(path_ + ": cannot close: " + std::strerror(errno));
  if (!incomplete.empty()) throw IoError(path_ + ": incomplete GGUF: " + incomplete);
}

std::vector<uint8_t> Writer::to_bytes(std::span<const std::span<const uint8_t>> tensor_data) const {
  if (tensor_data.size() != tensors_.size()) {
    throw std::invalid_argument("GGUF writer: " + std::to_string(tensor_data.size()) + " tensor buffers for " +
                                std::to_string(tensors_.size()) + " tensors");
  }
  std::vector<uint8_t> out = header();
  const Layout& l = layout();
  out.resize(l.file_size, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensor_data[i].size() != tensors_[i].n_bytes) {
      throw std::invalid_argument("GGUF writer: tensor '" + tensors_[i].name + "' takes " +
                                  std::to_string(tensors_[i].n_bytes) + " bytes, got " +
                                  std::to_string(tensor_data[i].size()));
    }
    if (!tensor_data[i].empty()) std::memcpy(out.data() + l.data_offset + l.offsets[i], tensor_data[i].data(),
                                             tensor_data[i].size());
  }
  return out;
}

}  // namespace strata::gguf
