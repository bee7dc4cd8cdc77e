// Writer -> reader round trips: every ggml type's blocks, every metadata value type (nested arrays included),
// files written by several threads at once, and a real model copied key by key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "strata/gguf.hpp"

namespace gguf = strata::gguf;
using strata::format::GgmlType;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<GgmlType> all_types() {
  std::vector<GgmlType> types;
  for (uint32_t id = 0; id < 64; ++id) {
    if (const auto tr = strata::format::type_traits(id)) types.push_back(tr->type);
  }
  return types;
}

std::string temp_path(const std::string& stem) {
  return ::testing::TempDir() + stem + "_" + std::to_string(::getpid()) + ".gguf";
}

}  // namespace

TEST(GgufRoundTrip, EveryTensorType) {
  const std::vector<GgmlType> types = all_types();
  ASSERT_EQ(types.size(), 32u);
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::array<uint64_t, 4>> shapes;
  for (size_t i = 0; i < types.size(); ++i) {
    const strata::format::TypeTraits& tr = strata::format::traits(types[i]);
    // Up to four dimensions, rows of whole blocks.
    const std::array<uint64_t, 4> ne = {uint64_t{tr.block_elems} * (1 + i % 3), 2 + i % 2, 1 + i % 3, 1 + i % 2};
    const uint32_t n_dims = 1 + static_cast<uint32_t>(i % 4);
    w.add_tensor("t." + std::string(tr.name), types[i], std::span<const uint64_t>(ne.data(), n_dims));
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; ++d) n *= ne[d];
    ASSERT_EQ(w.tensor_bytes(i), n / tr.block_elems * tr.block_bytes) << tr.name;
    data.push_back(random_bytes(w.tensor_bytes(i), static_cast<uint32_t>(i)));
    std::array<uint64_t, 4> padded = {1, 1, 1, 1};
    for (uint32_t d = 0; d < n_dims; ++d) padded[d] = ne[d];
    shapes.push_back(padded);
  }
  const std::vector<std::span<const uint8_t>> spans(data.begin(), data.end());
  const gguf::File f = gguf::File::from_memory(w.to_bytes(spans), "types.gguf");
  ASSERT_EQ(f.tensors().size(), types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const gguf::TensorView& t = f.tensors()[i];
    const strata::format::TypeTraits& tr = strata::format::traits(types[i]);
    EXPECT_EQ(t.name, "t." + std::string(tr.name));
    EXPECT_EQ(t.type, types[i]);
    EXPECT_EQ(t.n_dims, 1 + i % 4);
    EXPECT_EQ(t.ne, shapes[i]) << tr.name;
    EXPECT_EQ(t.n_elements, shapes[i][0] * shapes[i][1] * shapes[i][2] * shapes[i][3]);
    EXPECT_EQ(t.file_offset % 32, 0u);
    EXPECT_EQ(t.file_offset, w.tensor_file_offset(i));
    ASSERT_EQ(t.n_bytes, data[i].size());
    EXPECT_EQ(std::memcmp(t.data, data[i].data(), t.n_bytes), 0) << tr.name;
  }
}

TEST(GgufRoundTrip, EveryValueType) {
  gguf::Writer w;
  w.set_u8("u8", 250);
  w.set_i8("i8", -120);
  w.set_u16("u16", 65000);
  w.set_i16("i16", -32000);
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_u64("u64", 18000000000000000000ull);
  w.set_i64("i64", -9000000000000000000ll);
  w.set_f32("f32", 1.5f);
  w.set_f64("f64", -2.25e300);
  w.set_bool("bool", true);
  w.set_bool("false", false);
  w.set_string("string", "h\xC3\xA9llo");
  w.set_string("empty_string", "");
  const std::vector<uint8_t> u8s = {0, 255};
  const std::vector<int8_t> i8s = {-128, 127};
  const std::vector<uint16_t> u16s = {0, 65535};
  const std::vector<int16_t> i16s = {-32768, 32767};
  const std::vector<uint32_t> u32s = {0, 4294967295u};
  const std::vector<int32_t> i32s = {-2147483647 - 1, 2147483647};
  const std::vector<uint64_t> u64s = {0, 18446744073709551615ull};
  const std::vector<int64_t> i64s = {INT64_MIN, INT64_MAX};
  const std::vector<float> f32s = {0.5f, -1e30f};
  const std::vector<double> f64s = {0.25, -1e300};
  const std::vector<std::string> strs = {"", "a", std::string(1000, 'z')};
  const std::vector<std::string_view> views = {"x", "yz"};
  w.set_array("a.u8", std::span<const uint8_t>(u8s));
  w.set_array("a.i8", std::span<const int8_t>(i8s));
  w.set_array("a.u16", std::span<const uint16_t>(u16s));
  w.set_array("a.i16", std::span<const int16_t>(i16s));
  w.set_array("a.u32", std::span<const uint32_t>(u32s));
  w.set_array("a.i32", std::span<const int32_t>(i32s));
  w.set_array("a.u64", std::span<const uint64_t>(u64s));
  w.set_array("a.i64", std::span<const int64_t>(i64s));
  w.set_array("a.f32", std::span<const float>(f32s));
  w.set_array("a.f64", std::span<const double>(f64s));
  w.set_array("a.string", std::span<const std::string>(strs));
  w.set_array("a.view", std::span<const std::string_view>(views));
  w.set_array("a.empty", std::span<const float>());
  gguf::ArrayBuilder bools(gguf::ValueType::Bool);
  bools.add_bool(true).add_bool(false).add_bool(true);
  w.set_array("a.bool", bools);
  // [[1, 2], [], [3]] and [["p", "q"], [[7]]] shapes: arrays of arrays, of strings, three deep.
  gguf::ArrayBuilder ints(gguf::ValueType::Array);
  ints.add_array(gguf::ArrayBuilder(gguf::ValueType::I32).add_i32(1).add_i32(2))
      .add_array(gguf::ArrayBuilder(gguf::ValueType::I32))
      .add_array(gguf::ArrayBuilder(gguf::ValueType::I32).add_i32(3));
  w.set_array("nested.ints", ints);
  gguf::ArrayBuilder three(gguf::ValueType::Array);
  three.add_array(gguf::ArrayBuilder(gguf::ValueType::Array)
                      .add_array(gguf::ArrayBuilder(gguf::ValueType::String).add_string("p").add_string("q")))
      .add_array(gguf::ArrayBuilder(gguf::ValueType::Array)
                     .add_array(gguf::ArrayBuilder(gguf::ValueType::U64).add_u64(7)));
  w.set_array("nested.three", three);
  EXPECT_THROW(gguf::ArrayBuilder(gguf::ValueType::I32).add_u32(1), std::invalid_argument);

  const gguf::File f = gguf::File::from_memory(w.to_bytes({}), "values.gguf");
  const gguf::Metadata& m = f.metadata();
  EXPECT_EQ(m.entries().size(), 30u);
  EXPECT_EQ(m.get_u8("u8"), 250);
  EXPECT_EQ(m.get_i8("i8"), -120);
  EXPECT_EQ(m.get_u16("u16"), 65000);
  EXPECT_EQ(m.get_i16("i16"), -32000);
  EXPECT_EQ(m.get_u32("u32"), 4000000000u);
  EXPECT_EQ(m.get_i32("i32"), -2000000000);
  EXPECT_EQ(m.get_u64("u64"), 18000000000000000000ull);
  EXPECT_EQ(m.get_i64("i64"), -9000000000000000000ll);
  EXPECT_EQ(m.get_f32("f32"), 1.5f);
  EXPECT_EQ(m.get_f64("f64"), -2.25e300);
  EXPECT_EQ(m.get_bool("bool"), true);
  EXPECT_EQ(m.get_bool("false"), false);
  EXPECT_EQ(m.get_string("string"), "h\xC3\xA9llo");
  EXPECT_EQ(m.get_string("empty_string"), "");
  const std::pair<const char*, gguf::ValueType> types[] = {
      {"u8", gguf::ValueType::U8},         {"i8", gguf::ValueType::I8},         {"u16", gguf::ValueType::U16},
      {"i16", gguf::ValueType::I16},       {"u32", gguf::ValueType::U32},       {"i32", gguf::ValueType::I32},
      {"u64", gguf::ValueType::U64},       {"i64", gguf::ValueType::I64},       {"f32", gguf::ValueType::F32},
      {"f64", gguf::ValueType::F64},       {"bool", gguf::ValueType::Bool},     {"string", gguf::ValueType::String},
      {"a.u8", gguf::ValueType::Array}};
  for (const auto& [key, type] : types) EXPECT_EQ(m.find(key)->value.type(), type) << key;

  EXPECT_EQ(m.get_array("a.u8").to_u64(), (std::vector<uint64_t>{0, 255}));
  EXPECT_EQ(m.get_array("a.i8").to_i64(), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(m.get_array("a.u16").to_u64(), (std::vector<uint64_t>{0, 65535}));
  EXPECT_EQ(m.get_array("a.i16").to_i64(), (std::vector<int64_t>{-32768, 32767}));
  EXPECT_EQ(m.get_array("a.u32").to_u32(), u32s);
  EXPECT_EQ(m.get_array("a.i32").to_i32(), i32s);
  EXPECT_EQ(m.get_i32_array("a.i32"), i32s);
  EXPECT_EQ(m.get_array("a.u64").to_u64(), u64s);
  EXPECT_EQ(m.get_array("a.i64").to_i64(), i64s);
  EXPECT_EQ(m.get_f32_array("a.f32"), f32s);
  EXPECT_EQ(m.get_array("a.f64").to_f64(), f64s);
  EXPECT_FALSE(m.get_array("a.u64").to_i64().has_value());  // 2^64-1 does not fit
  EXPECT_FALSE(m.get_array("a.i8").to_u64().has_value());   // -128 does not fit
  EXPECT_FALSE(m.get_array("a.f32").to_i64().has_value());
  const auto strings = m.get_string_array("a.string");
  ASSERT_EQ(strings.size(), 3u);
  EXPECT_EQ(strings[0], "");
  EXPECT_EQ(strings[1], "a");
  EXPECT_EQ(strings[2], std::string(1000, 'z'));
  EXPECT_EQ(m.get_array("a.string")[2].as_string(), std::string(1000, 'z'));
  EXPECT_EQ(m.get_string_array("a.view")[1], "yz");
  EXPECT_TRUE(m.get_array("a.empty").empty());
  EXPECT_EQ(m.get_array("a.empty").element_type(), gguf::ValueType::F32);
  const gguf::ArrayView b = m.get_array("a.bool");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].as_bool(), true);
  EXPECT_EQ(b[1].as_bool(), false);
  EXPECT_EQ(b[2].as_bool(), true);

  const gguf::ArrayView ni = m.get_array("nested.ints");
  EXPECT_EQ(ni.element_type(), gguf::ValueType::Array);
  ASSERT_EQ(ni.arrays().size(), 3u);
  EXPECT_EQ(ni[0].as_array()->to_i32(), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(ni[1].as_array()->empty());
  EXPECT_EQ(ni[2].as_array()->to_i32(), (std::vector<int32_t>{3}));
  const gguf::ArrayView n3 = m.get_array("nested.three");
  ASSERT_EQ(n3.size(), 2u);
  const gguf::ArrayView pq = *(*n3[0].as_array())[0].as_array();
  ASSERT_EQ(pq.strings().size(), 2u);
  EXPECT_EQ(pq.strings()[0], "p");
  EXPECT_EQ(pq.strings()[1], "q");
  EXPECT_EQ((*(*n3[1].as_array())[0].as_array()).to_u64(), (std::vector<uint64_t>{7}));
  EXPECT_EQ(m.find("nested.three")->value.describe(), "array of 2 array");
}

TEST(GgufRoundTrip, SettingAKeyAgainReplacesItInPlace) {
  gguf::Writer w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "one");
  EXPECT_TRUE(w.remove("b"));
  EXPECT_FALSE(w.remove("b"));
  w.set_version(2);
  const gguf::File f = gguf::File::from_memory(w.to_bytes({}), "v2.gguf");
  EXPECT_EQ(f.version(), 2u);
  ASSERT_EQ(f.metadata().entries().size(), 1u);
  EXPECT_EQ(f.metadata().get_string("a"), "one");
  EXPECT_THROW(w.set_version(1), std::invalid_argument);
}

TEST(GgufRoundTrip, WriterRejectsBadTensorInfos) {
  gguf::Writer w;
  const uint64_t ok[] = {256, 2};
  const uint64_t partial_block[] = {100, 2};
  const uint64_t zero[] = {32, 0};
  const uint64_t five[] = {32, 1, 1, 1, 1};
  w.add_tensor("x", GgmlType::Q4_K, ok);
  EXPECT_THROW(w.add_tensor("x", GgmlType::F32, ok), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("y", GgmlType::Q4_K, partial_block), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("z", GgmlType::F32, zero), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("w", GgmlType::F32, five), std::invalid_argument);
  EXPECT_THROW(w.set_alignment(48), std::invalid_argument);
  w.set_alignment(64);
  EXPECT_EQ(w.data_offset() % 64, 0u);
  const gguf::File f = gguf::File::from_memory(w.to_bytes(std::vector<std::span<const uint8_t>>{
                                                   std::vector<uint8_t>(w.tensor_bytes(0))}),
                                               "aligned.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.tensors()[0].n_bytes, 2u * 144);
}

TEST(GgufRoundTrip, TensorsWrittenFromManyThreads) {
  const std::string path = temp_path("gguf_parallel");
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  w.set_alignment(64);
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < 24; ++i) {
    const uint64_t shape[] = {256, 16 + static_cast<uint64_t>(i)};
    const GgmlType type = i % 3 == 0 ? GgmlType::Q4_K : i % 3 == 1 ? GgmlType::Q8_0 : GgmlType::F16;
    w.add_tensor("blk." + std::to_string(i) + ".w", type, shape);
    data.push_back(random_bytes(w.tensor_bytes(static_cast<size_t>(i)), 1000u + static_cast<uint32_t>(i)));
  }
  w.open(path);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Each thread takes every fourth tensor, last first, and writes it in two chunks, second half first.
      for (int i = 23 - t; i >= 0; i -= 4) {
        const std::span<const uint8_t> all(data[static_cast<size_t>(i)]);
        const size_t half = all.size() / 2;
        w.write_tensor_chunk(static_cast<size_t>(i), half, all.subspan(half));
        w.write_tensor_chunk(static_cast<size_t>(i), 0, all.first(half));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  w.close();
  EXPECT_EQ(std::filesystem::file_size(path), w.file_size());
  const gguf::File f = gguf::File::open(path);
  ASSERT_EQ(f.tensors().size(), 24u);
  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(f.tensors()[i].file_offset, w.tensor_file_offset(i));
    ASSERT_EQ(f.tensors()[i].n_bytes, data[i].size());
    EXPECT_EQ(std::memcmp(f.tensors()[i].data, data[i].data(), data[i].size()), 0) << i;
  }
  std::filesystem::remove(path);
}

TEST(GgufRoundTrip, CloseNamesATensorNotWrittenInFull) {
  const std::string path = temp_path("gguf_incomplete");
  gguf::Writer w;
  const uint64_t shape[] = {64};
  w.add_tensor("done", GgmlType::F32, shape);
  w.add_tensor("half", GgmlType::F32, shape);
  w.open(path);
  EXPECT_THROW(w.set_u32("late", 1), std::logic_error);
  w.write_tensor(0, std::vector<uint8_t>(256));
  w.write_tensor_chunk(1, 0, std::vector<uint8_t>(100));
  EXPECT_THROW(w.write_tensor(1, std::vector<uint8_t>(255)), std::invalid_argument);
  EXPECT_THROW(w.write_tensor_chunk(1, 200, std::vector<uint8_t>(100)), std::invalid_argument);
  try {
    w.close();
    FAIL() << "close() accepted a tensor written in part";
  } catch (const gguf::IoError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": incomplete GGUF: tensor 'half' got 100 of its 256 bytes");
  }
  std::filesystem::remove(path);
}

TEST(GgufRoundTrip, StoriesCopiedKeyByKeyReadsTheSame) {
  const gguf::File src = gguf::File::open(STRATA_SOURCE_DIR "/models/stories260K.gguf");
  gguf::Writer w;
  for (const gguf::KeyValue& kv : src.metadata().entries()) w.set_value(kv.key, kv.value);
  std::vector<std::span<const uint8_t>> data;
  for (const gguf::TensorView& t : src.tensors()) {
    w.add_tensor(t.name, t.type, t.shape());
    data.push_back(t.bytes());
  }
  const std::vector<uint8_t> bytes = w.to_bytes(data);
  // gguf-py wrote this file the same way: the copy is byte for byte the original.
  ASSERT_EQ(bytes.size(), src.size());
  EXPECT_EQ(std::memcmp(bytes.data(), src.bytes().data(), bytes.size()), 0);
  const gguf::File copy = gguf::File::from_memory(bytes, "copy.gguf");
  EXPECT_EQ(copy.metadata().get_string_array("tokenizer.ggml.tokens")[300],
            src.metadata().get_string_array("tokenizer.ggml.tokens")[300]);
}
