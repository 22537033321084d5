// RemoteOptions' checks, which every remote store applies before its first
// request, and which locations are remote at all.
#include "feedline/storage/remote_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;

TEST(CheckRemoteOptions, TheDefaultsPass) { EXPECT_NO_THROW(CheckRemoteOptions(RemoteOptions{})); }

TEST(CheckRemoteOptions, RefusesEachBadFieldNamingItTheRuleAndTheValue) {
  struct Case {
    std::function<void(RemoteOptions&)> spoil;
    const char* says;
  };
  const Case cases[] = {
      {[](RemoteOptions& o) { o.max_attempts = 0; }, "max_attempts must be >= 1, got 0"},
      {[](RemoteOptions& o) { o.retry_budget_s = 0; }, "retry_budget_s must be > 0, got 0"},
      {[](RemoteOptions& o) { o.retry_budget_s = NAN; }, "retry_budget_s must be > 0"},
      {[](RemoteOptions& o) { o.connect_timeout_s = -1; }, "connect_timeout_s must be > 0, got -1"},
      {[](RemoteOptions& o) { o.stall_timeout_s = 0; }, "stall_timeout_s must be > 0, got 0"},
      {[](RemoteOptions& o) { o.backoff_s = -0.5; }, "backoff_s must be >= 0, got -0.5"},
      {[](RemoteOptions& o) { o.prefetch_requests = 0; }, "prefetch_requests must be >= 1, got 0"},
      {[](RemoteOptions& o) { o.download_part_bytes = 4096; },
       "download_part_bytes must be >= 65536, got 4096"},
      {[](RemoteOptions& o) { o.download_parts = 0; }, "download_parts must be >= 1, got 0"},
  };
  for (const Case& c : cases) {
    RemoteOptions options;
    c.spoil(options);
    try {
      CheckRemoteOptions(options);
      ADD_FAILURE() << "accepted: " << c.says;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("remote options: "));
      EXPECT_THAT(e.what(), HasSubstr(c.says));
    }
  }
  RemoteOptions no_backoff;
  no_backoff.backoff_s = 0;
  EXPECT_NO_THROW(CheckRemoteOptions(no_backoff));
}

TEST(IsRemoteLocation, HttpHttpsAndS3AreRemote) {
  EXPECT_TRUE(IsRemoteLocation("http://host/pack/"));
  EXPECT_TRUE(IsRemoteLocation("https://host:8443/pack/shard-000000.tar"));
  EXPECT_TRUE(IsRemoteLocation("s3://bucket/pack/"));
  EXPECT_FALSE(IsRemoteLocation("/data/pack"));
  EXPECT_FALSE(IsRemoteLocation("pack/http://x"));
  EXPECT_FALSE(IsRemoteLocation("ftp://host/pack"));
  EXPECT_FALSE(IsRemoteLocation("HTTP://host/pack"));
  EXPECT_FALSE(IsRemoteLocation(""));
}

}  // namespace
}  // namespace feedline::storage
