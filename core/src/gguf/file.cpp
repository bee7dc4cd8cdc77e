// A GGUF file opened from a path (mapped) or from memory, parsed and validated once.
#include "store.hpp"

namespace strata::gguf {

File::File() : store_(std::make_unique<detail::Store>()) { store_->metadata.store_ = store_.get(); }
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::string& path) {
  File f;
  detail::Store& s = *f.store_;
  s.name = path;
  s.mapping = detail::Mapping(path);
  s.base = s.mapping.data();
  s.size = s.mapping.size();
  s.parse();
  return f;
}

File File::from_memory(std::span<const uint8_t> bytes, std::string name) {
  File f;
  detail::Store& s = *f.store_;
  s.name = std::move(name);
  s.base = bytes.data();
  s.size = bytes.size();
  s.parse();
  return f;
}

File File::from_memory(std::vector<uint8_t> bytes, std::string name) {
  File f;
  detail::Store& s = *f.store_;
  s.name = std::move(name);
  s.owned = std::move(bytes);
  s.base = s.owned.data();
  s.size = s.owned.size();
  s.parse();
  return f;
}

const std::string& File::name() const { return store_->name; }
uint32_t File::version() const { return store_->version; }
uint32_t File::alignment() const { return store_->alignment; }
uint64_t File::size() const { return store_->size; }
uint64_t File::data_offset() const { return store_->data_offset; }
std::span<const uint8_t> File::bytes() const { return {store_->base, store_->size}; }
const Metadata& File::metadata() const { return store_->metadata; }
std::span<const TensorView> File::tensors() const { return store_->tensors; }

const TensorView* File::find_tensor(std::string_view name) const {
  const auto it = store_->tensor_index.find(name);
  return it == store_->tensor_index.end() ? nullptr : &store_->tensors[it->second];
}

}  // namespace strata::gguf
