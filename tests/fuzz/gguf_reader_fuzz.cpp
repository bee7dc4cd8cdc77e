// libFuzzer target for the GGUF reader: any input either reads or throws a strata::Error. What reads is walked
// completely (every value, every tensor byte) and must satisfy the reader's promises; it is then written again
// with the Writer and read back, and must come back the same.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "strata/gguf.hpp"

namespace gguf = strata::gguf;

namespace {

// A broken promise is a finding: stop here so libFuzzer saves the input.
void require(bool ok) {
  if (!ok) __builtin_trap();
}

uint64_t visit(const gguf::Value& v) {
  uint64_t h = v.describe().size() + v.encoded().size();
  if (v.as_u64()) h += *v.as_u64();
  if (v.as_i64()) h += static_cast<uint64_t>(*v.as_i64());
  if (v.as_f64()) h += *v.as_f64() == 0.0 ? 1 : 2;
  if (v.as_bool()) h += *v.as_bool();
  if (const auto s = v.as_string()) {
    for (char c : *s) h += static_cast<uint8_t>(c);
  }
  if (const auto a = v.as_array()) {
    for (uint64_t i = 0; i < a->size(); ++i) h += visit((*a)[i]);
    for (std::string_view s : a->strings()) h += s.size();
    for (uint8_t b : a->element_bytes()) h += b;
    require(a->arrays().size() == (a->element_type() == gguf::ValueType::Array ? a->size() : 0));
    require(a->strings().size() == (a->element_type() == gguf::ValueType::String ? a->size() : 0));
    h += a->to_i64().has_value() + a->to_u64().has_value() + a->to_f64().has_value();
    h += a->to_i32().has_value() + a->to_u32().has_value() + a->to_f32().has_value();
  }
  return h;
}

// The typed getters on every key: each returns or throws MetadataError.
uint64_t try_getters(const gguf::Metadata& m, std::string_view key) {
  uint64_t h = 0;
  const auto attempt = [&](auto&& get) {
    try {
      get();
      ++h;
    } catch (const gguf::MetadataError&) {
    }
  };
  attempt([&] { h += m.get_u8(key); });
  attempt([&] { h += static_cast<uint64_t>(m.get_i16(key)); });
  attempt([&] { h += m.get_u32(key); });
  attempt([&] { h += static_cast<uint64_t>(m.get_i64(key)); });
  attempt([&] { h += m.get_f32(key) == 0.0f; });
  attempt([&] { h += m.get_bool(key); });
  attempt([&] { h += m.get_string(key).size(); });
  attempt([&] { h += m.get_string_array(key).size(); });
  attempt([&] { h += m.get_i32_array(key).size(); });
  attempt([&] { h += m.get_f32_array(key).size(); });
  return h;
}

void check_tensors(const gguf::File& f, std::span<const uint8_t> input) {
  for (const gguf::TensorView& t : f.tensors()) {
    require(t.n_dims <= gguf::kMaxDims);
    uint64_t n = 1;
    for (uint64_t e : t.ne) n *= e;
    require(n == t.n_elements && n > 0);
    require(t.file_offset >= f.data_offset() && t.file_offset % f.alignment() == 0);
    require(t.file_offset <= input.size() && t.n_bytes <= input.size() - t.file_offset);
    require(t.data == input.data() + t.file_offset);
    require(f.find_tensor(t.name) == &t);
    uint64_t sum = 0;
    for (uint8_t b : t.bytes()) sum += b;  // every byte is inside the input: ASan says otherwise
    (void)sum;
  }
}

// Writes what was read with the Writer and reads it back: the same keys, values, tensor infos and bytes.
void check_round_trip(const gguf::File& f) {
  gguf::Writer w;
  w.set_version(f.version());
  for (const gguf::KeyValue& kv : f.metadata().entries()) w.set_value(kv.key, kv.value);
  std::vector<std::span<const uint8_t>> data;
  for (const gguf::TensorView& t : f.tensors()) {
    w.add_tensor(t.name, t.type, t.shape());
    data.push_back(t.bytes());
  }
  const gguf::File g = gguf::File::from_memory(w.to_bytes(data), "rewritten.gguf");
  const auto a = f.metadata().entries();
  const auto b = g.metadata().entries();
  require(a.size() == b.size() && g.alignment() == f.alignment() && g.version() == f.version());
  for (size_t i = 0; i < a.size(); ++i) {
    require(a[i].key == b[i].key && a[i].value.type() == b[i].value.type());
    const auto ea = a[i].value.encoded();
    const auto eb = b[i].value.encoded();
    require(ea.size() == eb.size() && std::memcmp(ea.data(), eb.data(), ea.size()) == 0);
  }
  require(f.tensors().size() == g.tensors().size());
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const gguf::TensorView& x = f.tensors()[i];
    const gguf::TensorView& y = g.tensors()[i];
    require(x.name == y.name && x.type == y.type && x.n_dims == y.n_dims && x.ne == y.ne && x.n_bytes == y.n_bytes);
    require(std::memcmp(x.data, y.data, x.n_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  try {
    const gguf::File f = gguf::File::from_memory(input, "fuzz.gguf");
    uint64_t h = 0;
    for (const gguf::KeyValue& kv : f.metadata().entries()) {
      require(f.metadata().find(kv.key) == &kv);
      h += visit(kv.value) + try_getters(f.metadata(), kv.key);
    }
    (void)h;
    check_tensors(f, input);
    check_round_trip(f);
  } catch (const strata::Error&) {
    // Rejected input: the expected outcome for most of what the fuzzer makes.
  }
  return 0;
}
