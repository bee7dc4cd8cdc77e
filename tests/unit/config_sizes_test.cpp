// Byte sizes (serve.max_body, experts.cache) and the cache's percent / auto forms.
#include <gtest/gtest.h>

#include "strata/config.hpp"
#include "strata/error.hpp"

namespace cfg = strata::config;

namespace {

std::string size_error(const std::string& text) {
  try {
    cfg::parse_byte_size(text);
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "no error";
}

// The one diagnostic that `-o experts.cache=<text>` produces, or "" when it is accepted.
std::string cache_override(const std::string& text, cfg::CacheSize* out = nullptr) {
  const cfg::Overrides o = {"experts.cache=" + text};
  const std::vector<cfg::Diagnostic> d = cfg::check_file({}, {}, o);
  if (!d.empty()) return d.front().text();
  if (out) *out = cfg::load({}, {}, o).experts.cache;
  return "";
}

}  // namespace

TEST(ConfigSizes, UnitsBinaryAndDecimal) {
  EXPECT_EQ(cfg::parse_byte_size("1000000"), 1000000u);
  EXPECT_EQ(cfg::parse_byte_size("0"), 0u);
  EXPECT_EQ(cfg::parse_byte_size("17B"), 17u);
  EXPECT_EQ(cfg::parse_byte_size("8GiB"), 8ull << 30);
  EXPECT_EQ(cfg::parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(cfg::parse_byte_size("3KiB"), 3072u);
  EXPECT_EQ(cfg::parse_byte_size("2TiB"), 2ull << 40);
  EXPECT_EQ(cfg::parse_byte_size("1KB"), 1000u);
  EXPECT_EQ(cfg::parse_byte_size("1kB"), 1000u);
  EXPECT_EQ(cfg::parse_byte_size("8GB"), 8000000000u);
  EXPECT_EQ(cfg::parse_byte_size("8 GiB"), 8ull << 30);
  EXPECT_EQ(cfg::parse_byte_size("18446744073709551615"), 18446744073709551615ull);
}

TEST(ConfigSizes, FractionsMustGiveWholeBytes) {
  EXPECT_EQ(cfg::parse_byte_size("1.5GiB"), 1610612736u);
  EXPECT_EQ(cfg::parse_byte_size("1.5GB"), 1500000000u);
  EXPECT_EQ(cfg::parse_byte_size("0.5KiB"), 512u);
  EXPECT_EQ(cfg::parse_byte_size("0.001KB"), 1u);
  EXPECT_EQ(cfg::parse_byte_size("2.50MB"), 2500000u);
  EXPECT_EQ(size_error("1.5B"), "'1.5B' is not a whole number of bytes");
  EXPECT_EQ(size_error("0.0001KB"), "'0.0001KB' is not a whole number of bytes");
}

TEST(ConfigSizes, RejectsNegativeUnknownUnitsAndOverflow) {
  EXPECT_EQ(size_error("-1MiB"), "'-1MiB' is negative: a size must be >= 0");
  EXPECT_EQ(size_error("12XB"),
            "'12XB' has an unknown unit 'XB': use B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB "
            "(powers of 1000)");
  EXPECT_EQ(size_error("8G"),
            "'8G' has an unknown unit 'G': use B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB "
            "(powers of 1000)");
  EXPECT_EQ(size_error("GiB"), "expected a size such as 8GiB, 512MiB or 1000000, got 'GiB'");
  EXPECT_EQ(size_error(""), "expected a size such as 8GiB, 512MiB or 1000000, got ''");
  EXPECT_EQ(size_error("18446744073709551616"), "'18446744073709551616' is too large");
  EXPECT_EQ(size_error("16777216TiB"), "'16777216TiB' is too large");
  EXPECT_EQ(size_error("99999999999999999999"), "'99999999999999999999' is too large");
}

TEST(ConfigSizes, FormatPicksTheLargestExactBinaryUnit) {
  EXPECT_EQ(cfg::format_byte_size(8ull << 30), "8GiB");
  EXPECT_EQ(cfg::format_byte_size(1536ull << 10), "1536KiB");
  EXPECT_EQ(cfg::format_byte_size(1000000), "1000000");
  EXPECT_EQ(cfg::format_byte_size(0), "0");
  EXPECT_EQ(cfg::format_byte_size(1536), "1536");
  for (uint64_t v : {uint64_t{1}, uint64_t{4096}, uint64_t{3} << 40, uint64_t{123456789}})
    EXPECT_EQ(cfg::parse_byte_size(cfg::format_byte_size(v)), v);
}

TEST(ConfigSizes, CacheTakesAutoPercentOrBytes) {
  cfg::CacheSize c;
  EXPECT_EQ(cache_override("25%", &c), "");
  EXPECT_EQ(c.kind, cfg::CacheSize::Kind::Percent);
  EXPECT_EQ(c.percent, 25.0);
  EXPECT_EQ(cache_override("12.5%", &c), "");
  EXPECT_EQ(c.percent, 12.5);
  EXPECT_EQ(cache_override("8GiB", &c), "");
  EXPECT_EQ(c.kind, cfg::CacheSize::Kind::Bytes);
  EXPECT_EQ(c.bytes, 8ull << 30);
  EXPECT_EQ(cache_override("0", &c), "");
  EXPECT_EQ(c.kind, cfg::CacheSize::Kind::Bytes);
  EXPECT_EQ(c.bytes, 0u);
  EXPECT_EQ(cache_override("auto", &c), "");
  EXPECT_EQ(c.kind, cfg::CacheSize::Kind::Auto);
}

TEST(ConfigSizes, CacheErrorsNameTheOverride) {
  EXPECT_EQ(cache_override("120%"), "-o experts.cache=120%: experts.cache: '120%' is out of range: a percentage must be 0..100%");
  EXPECT_EQ(cache_override("-5%"), "-o experts.cache=-5%: experts.cache: '-5%' is out of range: a percentage must be 0..100%");
  EXPECT_EQ(cache_override("lots%"), "-o experts.cache=lots%: experts.cache: expected a percentage such as 25%, got 'lots%'");
  EXPECT_EQ(cache_override("-1MiB"), "-o experts.cache=-1MiB: experts.cache: '-1MiB' is negative: a size must be >= 0");
  EXPECT_EQ(cache_override("12XB"),
            "-o experts.cache=12XB: experts.cache: '12XB' has an unknown unit 'XB': use B, KiB, MiB, GiB, TiB "
            "(powers of 1024) or KB, MB, GB, TB (powers of 1000)");
  EXPECT_EQ(cache_override("big"),
            "-o experts.cache=big: experts.cache: expected auto, a percentage such as 25% or a size such as 8GiB, "
            "got 'big'");
}
