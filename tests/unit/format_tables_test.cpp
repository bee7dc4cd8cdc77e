// The generated lookup tables against the raw grid files, read at test time (core/format/data/grids).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "quant_vectors.hpp"
#include "strata/format/tables.hpp"

namespace {

namespace fmt = strata::format;

struct TableView {
  const void* data;
  size_t bytes;
  size_t element_bytes;
};

const std::map<std::string, TableView>& compiled_tables() {
  static const std::map<std::string, TableView> tables = {
      {"iq2xxs_grid", {fmt::iq2xxs_grid, sizeof fmt::iq2xxs_grid, 8}},
      {"iq2xs_grid", {fmt::iq2xs_grid, sizeof fmt::iq2xs_grid, 8}},
      {"iq2s_grid", {fmt::iq2s_grid, sizeof fmt::iq2s_grid, 8}},
      {"iq3xxs_grid", {fmt::iq3xxs_grid, sizeof fmt::iq3xxs_grid, 4}},
      {"iq3s_grid", {fmt::iq3s_grid, sizeof fmt::iq3s_grid, 4}},
      {"iq1s_grid", {fmt::iq1s_grid, sizeof fmt::iq1s_grid, 8}},
      {"ksigns_iq2xs", {fmt::ksigns_iq2xs, sizeof fmt::ksigns_iq2xs, 1}},
      {"kmask_iq2xs", {fmt::kmask_iq2xs, sizeof fmt::kmask_iq2xs, 1}},
      {"ksigns64", {fmt::ksigns64, sizeof fmt::ksigns64, 8}},
      {"kvalues_iq4nl", {fmt::kvalues_iq4nl, sizeof fmt::kvalues_iq4nl, 1}},
      {"kvalues_mxfp4", {fmt::kvalues_mxfp4, sizeof fmt::kvalues_mxfp4, 1}},
  };
  return tables;
}

std::filesystem::path grids_dir() { return std::filesystem::path(STRATA_SOURCE_DIR) / "core/format/data/grids"; }

size_t element_bytes_of(const std::string& kind) {
  if (kind == "uint64") return 8;
  if (kind == "uint32") return 4;
  if (kind == "uint8" || kind == "int8") return 1;
  return 0;
}

TEST(Tables, MatchTheGridFilesByteForByte) {
  const auto rows = strata::test::read_tsv(grids_dir() / "grids.tsv");
  ASSERT_GT(rows.size(), 1u);
  size_t seen = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    ASSERT_GE(row.size(), 5u) << "grids.tsv line " << r + 1;
    const std::string& name = row[0];
    const auto it = compiled_tables().find(name);
    ASSERT_NE(it, compiled_tables().end()) << "grids.tsv lists " << name << " but tables.hpp does not declare it";
    const TableView& t = it->second;
    const size_t count = std::stoul(row[2]);
    EXPECT_EQ(t.element_bytes, element_bytes_of(row[1])) << name;
    EXPECT_EQ(t.bytes, count * t.element_bytes) << name << ": element count differs from grids.tsv";

    const std::vector<uint8_t> raw = strata::test::read_bytes(grids_dir() / row[4]);
    ASSERT_EQ(raw.size(), t.bytes) << name;
    const auto* table = static_cast<const uint8_t*>(t.data);
    EXPECT_EQ(std::memcmp(table, raw.data(), t.element_bytes), 0) << name << ": first element differs";
    EXPECT_EQ(std::memcmp(table + t.bytes - t.element_bytes, raw.data() + raw.size() - t.element_bytes,
                          t.element_bytes), 0)
        << name << ": last element differs";
    EXPECT_EQ(strata::test::first_byte_difference(raw, std::vector<uint8_t>(table, table + t.bytes), t.element_bytes),
              "")
        << name;
    ++seen;
  }
  EXPECT_EQ(seen, compiled_tables().size()) << "tables.hpp declares a table grids.tsv does not list";
}

// Relations between the tables that ggml's decoders rely on, checked on the generated values.
TEST(Tables, SignTablesAreConsistent) {
  for (int j = 0; j < 8; ++j) EXPECT_EQ(fmt::kmask_iq2xs[j], 1u << j);
  for (int i = 0; i < 128; ++i) {
    const uint8_t s = fmt::ksigns_iq2xs[i];
    EXPECT_EQ(s & 127, i) << "ksigns_iq2xs[" << i << "] must keep the 7 stored sign bits";
    EXPECT_EQ(std::popcount(s) % 2, 0) << "ksigns_iq2xs[" << i << "] must have an even number of minus signs";
    for (int j = 0; j < 8; ++j) {
      const auto byte = static_cast<uint8_t>(fmt::ksigns64[i] >> (8 * j));
      EXPECT_EQ(byte, (s & (1u << j)) ? 0xffu : 0x00u) << "ksigns64[" << i << "] byte " << j;
    }
  }
}

TEST(Tables, Iq1sGridHoldsTernaryBytes) {
  for (uint64_t entry : fmt::iq1s_grid) {
    for (int j = 0; j < 8; ++j) {
      const auto v = static_cast<int8_t>(entry >> (8 * j));
      ASSERT_TRUE(v == -1 || v == 0 || v == 1) << std::hex << entry;
    }
  }
}

}  // namespace
