// Makes the GGUF fuzzer's seed corpus: small valid files (the real files' metadata with arrays cut short and a
// few small tensors; files with every value and tensor type), the real files truncated to a few KB, and one bad
// file per failure mode of the reader.
//   gguf_seed_corpus <out_dir> <real.gguf>...
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "gguf_samples.hpp"
#include "strata/gguf.hpp"

namespace gguf = strata::gguf;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kArrayKeep = 8;
constexpr size_t kTensorKeep = 6;
constexpr size_t kTruncateTo = 4096;

void write(const fs::path& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Arrays cut to their first kArrayKeep elements, recursively.
gguf::ArrayBuilder shortened(const gguf::ArrayView& a) {
  gguf::ArrayBuilder b(a.element_type());
  for (uint64_t i = 0; i < a.size() && i < kArrayKeep; ++i) {
    if (a.element_type() == gguf::ValueType::Array) {
      b.add_array(shortened(*a[i].as_array()));
    } else {
      b.add(a[i]);
    }
  }
  return b;
}

// The real file's keys with short arrays, and its first tensors reduced to one row of blocks.
std::vector<uint8_t> small_copy(const gguf::File& f) {
  gguf::Writer w;
  w.set_version(f.version());
  for (const gguf::KeyValue& kv : f.metadata().entries()) {
    if (const auto a = kv.value.as_array()) {
      w.set_array(kv.key, shortened(*a));
    } else {
      w.set_value(kv.key, kv.value);
    }
  }
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < f.tensors().size() && i < kTensorKeep; ++i) {
    const gguf::TensorView& t = f.tensors()[i];
    const uint64_t shape[] = {strata::format::traits(t.type).block_elems, 2};
    w.add_tensor(t.name, t.type, std::span<const uint64_t>(shape, t.n_dims < 2 ? 1 : 2));
    data.emplace_back(w.tensor_bytes(i), uint8_t{0});
    std::copy_n(t.data, std::min<uint64_t>(t.n_bytes, data.back().size()), data.back().begin());
  }
  return w.to_bytes(std::vector<std::span<const uint8_t>>(data.begin(), data.end()));
}

// One small tensor of every type and one key of every value type.
std::vector<uint8_t> every_type() {
  gguf::Writer w;
  w.set_u8("u8", 1);
  w.set_i8("i8", -1);
  w.set_u16("u16", 2);
  w.set_i16("i16", -2);
  w.set_u32("u32", 3);
  w.set_i32("i32", -3);
  w.set_u64("u64", 4);
  w.set_i64("i64", -4);
  w.set_f32("f32", 0.5f);
  w.set_f64("f64", 0.25);
  w.set_bool("bool", true);
  w.set_string("string", "s");
  gguf::ArrayBuilder nested(gguf::ValueType::Array);
  nested.add_array(gguf::ArrayBuilder(gguf::ValueType::String).add_string("x"))
      .add_array(gguf::ArrayBuilder(gguf::ValueType::Bool).add_bool(false));
  w.set_array("nested", nested);
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> data;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = strata::format::type_traits(id);
    if (!tr) continue;
    const uint64_t shape[] = {tr->block_elems};
    const size_t i = w.add_tensor(std::string(tr->name), tr->type, shape);
    data.emplace_back(w.tensor_bytes(i));
    for (uint8_t& b : data.back()) b = static_cast<uint8_t>(rng());
  }
  return w.to_bytes(std::vector<std::span<const uint8_t>>(data.begin(), data.end()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gguf_seed_corpus <out_dir> <real.gguf>...\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    fs::create_directories(out);
    write(out / "small.gguf", gguf::samples::small_file());
    write(out / "nested.gguf", gguf::samples::nested_arrays_file(4));
    write(out / "every_type.gguf", every_type());
    for (const gguf::samples::BadFile& b : gguf::samples::bad_files()) {
      write(out / ("bad_" + b.name + ".gguf"), b.bytes);
    }
    for (int i = 2; i < argc; ++i) {
      const gguf::File f = gguf::File::open(argv[i]);
      const std::string stem = fs::path(argv[i]).stem().string();
      write(out / (stem + ".small.gguf"), small_copy(f));
      write(out / (stem + ".head.gguf"), f.bytes().first(std::min(kTruncateTo, f.bytes().size())));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_seed_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
