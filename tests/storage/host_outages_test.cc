#include "src/storage/host_outages.h"

#include <gtest/gtest.h>

#include <chrono>

namespace feedline::storage {
namespace {

TEST(HostOutages, AHostIsTheUrlUpToItsPath) {
  EXPECT_EQ(HostOutages::HostOf("http://127.0.0.1:8080/train/shard-0.tar"), "http://127.0.0.1:8080");
  EXPECT_EQ(HostOutages::HostOf("https://example.org"), "https://example.org");
  EXPECT_EQ(HostOutages::HostOf("s3://bucket/corpus/part-0.parquet"), "s3://bucket");
}

TEST(HostOutages, AnOutageCountsFromTheFirstFailureUntilAnAnswer) {
  HostOutages outages;
  const auto t0 = HostOutages::Clock::now();
  EXPECT_FALSE(outages.FailingSince("http://a").has_value());
  outages.Failed("http://a", t0);
  outages.Failed("http://a", t0 + std::chrono::seconds(5));  // still the first one
  ASSERT_TRUE(outages.FailingSince("http://a").has_value());
  EXPECT_EQ(*outages.FailingSince("http://a"), t0);
  EXPECT_FALSE(outages.FailingSince("http://b").has_value());  // each host its own
  outages.Answered("http://a");
  EXPECT_FALSE(outages.FailingSince("http://a").has_value());
  outages.Failed("http://a", t0 + std::chrono::seconds(9));  // a new outage
  EXPECT_EQ(*outages.FailingSince("http://a"), t0 + std::chrono::seconds(9));
}

}  // namespace
}  // namespace feedline::storage
