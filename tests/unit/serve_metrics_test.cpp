// The server's metrics: Prometheus text with HELP and TYPE per family, counters by endpoint and status, a
// cumulative TTFT histogram, rates of the last completion, gauges and the expert hit rate; and /live's JSON.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "strata/serve/metrics.hpp"

namespace {

using strata::serve::CompletionStats;
using strata::serve::ServeGauges;
using strata::serve::ServerMetrics;

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(ServeMetrics, CountsRequestsTokensAndRates) {
  ServerMetrics m;
  m.count_request("/v1/chat/completions", 200);
  m.count_request("/v1/chat/completions", 200);
  m.count_request("/v1/chat/completions", 400);
  CompletionStats s;
  s.prompt_tokens = 30;
  s.cached_tokens = 10;
  s.generated_tokens = 5;
  s.prompt_seconds = 0.5;  // 20 fed tokens: 40/s
  s.decode_tokens = 4;
  s.decode_seconds = 0.25;  // 16/s
  s.ttft_seconds = 0.03;
  m.record(s);
  const std::string text = m.prometheus(ServeGauges{3, 1, nullptr});
  EXPECT_TRUE(has_line(text, "# TYPE strata_requests_total counter"));
  EXPECT_TRUE(has_line(text, "strata_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2"));
  EXPECT_TRUE(has_line(text, "strata_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1"));
  EXPECT_TRUE(has_line(text, "strata_prompt_tokens_total 30"));
  EXPECT_TRUE(has_line(text, "strata_prompt_cached_tokens_total 10"));
  EXPECT_TRUE(has_line(text, "strata_generated_tokens_total 5"));
  EXPECT_TRUE(has_line(text, "strata_prompt_tokens_per_second 40"));
  EXPECT_TRUE(has_line(text, "strata_decode_tokens_per_second 16"));
  EXPECT_TRUE(has_line(text, "strata_queue_length 3"));
  EXPECT_TRUE(has_line(text, "strata_requests_active 1"));
  EXPECT_EQ(text.find("strata_expert"), std::string::npos);  // no routes seen: no expert families
  // Every sample's family has HELP and TYPE lines.
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#') continue;
    std::string name = l.substr(0, l.find_first_of("{ "));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx = suffix;
      if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0 &&
          text.find("# TYPE " + name.substr(0, name.size() - sfx.size()) + " histogram") != std::string::npos) {
        name.resize(name.size() - sfx.size());
      }
    }
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << l;
    EXPECT_NE(text.find("# TYPE " + name + " "), std::string::npos) << l;
  }
}

TEST(ServeMetrics, TtftHistogramIsCumulative) {
  ServerMetrics m;
  for (double t : {0.005, 0.03, 0.03, 0.7, 100.0}) {
    CompletionStats s;
    s.ttft_seconds = t;
    m.record(s);
  }
  CompletionStats none;  // nothing generated: not observed
  m.record(none);
  const std::string text = m.prometheus({});
  EXPECT_TRUE(has_line(text, "# TYPE strata_time_to_first_token_seconds histogram"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"0.01\"} 1"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"0.025\"} 1"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"0.05\"} 3"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"1\"} 4"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"60\"} 4"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_bucket{le=\"+Inf\"} 5"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_count 5"));
  EXPECT_TRUE(has_line(text, "strata_time_to_first_token_seconds_sum 100.765"));
}

TEST(ServeMetrics, ExpertHitRateAndLiveRows) {
  ServerMetrics m;
  strata::ExpertUsage u;
  u.n_layer = 2;
  u.n_expert = 3;
  u.routed = {1, 2, 3, 4, 5, 5};
  u.hits = {1, 1, 1, 1, 1, 0};
  const std::string text = m.prometheus(ServeGauges{0, 0, &u});
  EXPECT_TRUE(has_line(text, "strata_expert_routed_total 20"));
  EXPECT_TRUE(has_line(text, "strata_expert_cache_hits_total 5"));
  EXPECT_TRUE(has_line(text, "strata_expert_cache_hit_rate 0.25"));

  const nlohmann::json live = m.live(ServeGauges{2, 1, &u}, "moe");
  EXPECT_EQ(live["model"], "moe");
  EXPECT_EQ(live["queue"], 2);
  EXPECT_EQ(live["active"], 1);
  EXPECT_EQ(live["expert"]["routed"], nlohmann::json::parse("[[1,2,3],[4,5,5]]"));
  EXPECT_EQ(live["expert"]["hits"], nlohmann::json::parse("[[1,1,1],[1,1,0]]"));
  u.hits.clear();
  const std::string no_cache = m.prometheus(ServeGauges{0, 0, &u});
  EXPECT_EQ(no_cache.find("strata_expert_cache_hit_rate"), std::string::npos);
  EXPECT_TRUE(m.live(ServeGauges{0, 0, &u}, "moe")["expert"]["hits"].is_null());
  EXPECT_TRUE(m.live(ServeGauges{}, "moe")["expert"].is_null());
}

TEST(ServeMetrics, LabelValuesAreEscaped) {
  ServerMetrics m;
  m.count_request("a\"b\\c\nd", 404);
  EXPECT_TRUE(has_line(m.prometheus({}), "strata_requests_total{endpoint=\"a\\\"b\\\\c\\nd\",status=\"404\"} 1"));
}

}  // namespace
