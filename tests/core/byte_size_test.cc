// The one rule for sizes in bytes (feedline/byte_size.h): K, M, G, ... and
// KiB, MiB, ... 1024-based, KB, MB, GB, ... 1000-based.
#include "feedline/byte_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace feedline {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* text;
  int64_t bytes;
};

constexpr int64_t kKi = 1024;
constexpr int64_t kMi = kKi * 1024;
constexpr int64_t kGi = kMi * 1024;
constexpr int64_t kTi = kGi * 1024;

TEST(ParseByteSize, ReadsEverySpellingByTheRule) {
  const Case cases[] = {
      // Plain bytes.
      {"0", 0},
      {"4096", 4096},
      {"4096B", 4096},
      {"4096 b", 4096},
      // A bare prefix, Ki and KiB: 1024-based.
      {"1K", kKi},
      {"1k", kKi},
      {"256M", 256 * kMi},
      {"2G", 2 * kGi},
      {"3T", 3 * kTi},
      {"1P", kTi * kKi},
      {"1E", kTi * kMi},
      {"1Ki", kKi},
      {"1Gi", kGi},
      {"1KiB", kKi},
      {"1MiB", kMi},
      {"2GiB", 2 * kGi},
      {"2gib", 2 * kGi},
      {"2GIB", 2 * kGi},
      {"1TiB", kTi},
      // KB, MB, ...: 1000-based, the SI names.
      {"1KB", 1000},
      {"1kb", 1000},
      {"1MB", 1000000},
      {"512MB", 512000000},
      {"2GB", 2000000000},
      {"1TB", 1000000000000},
      {"1PB", 1000000000000000},
      {"9EB", 9000000000000000000},
      // Fractions, exact, rounded down to whole bytes.
      {"1.5GB", 1500000000},
      {"1.5G", 3 * kGi / 2},
      {"1.5K", 1536},
      {"0.1K", 102},  // 102.4
      {"0.5", 0},
      {"1.", 1},
      {"2.000000000000000001GB", 2000000000},
      {"0.000000000000000001E", 1},  // 2^60 / 10^18 = 1.15...
      // Spaces around the number and the unit.
      {" 512 kib ", 512 * kKi},
      {"\t64MiB", 64 * kMi},
      // The largest size.
      {"9223372036854775807", INT64_MAX},
      {"7.999999999999999999EiB", INT64_MAX - 1},
  };
  for (const Case& c : cases) {
    const ByteSizeParse size = ParseByteSize(c.text);
    EXPECT_EQ(size.error, "") << c.text;
    EXPECT_EQ(size.bytes, c.bytes) << c.text;
  }
}

TEST(ParseByteSize, KBAndKiBDiffer) {
  EXPECT_EQ(ParseByteSize("1MB").bytes, 1000000);
  EXPECT_EQ(ParseByteSize("1MiB").bytes, 1048576);
  EXPECT_EQ(ParseByteSize("1M").bytes, 1048576);
}

struct BadCase {
  const char* text;
  const char* reason;
};

TEST(ParseByteSize, RefusesWhatIsNoSizeSayingWhy) {
  const BadCase cases[] = {
      {"", "does not begin with a number"},
      {"   ", "does not begin with a number"},
      {"lots", "does not begin with a number"},
      {"GB", "does not begin with a number"},
      {".5G", "does not begin with a number"},
      {"-5", "negative"},
      {"-1K", "negative"},
      {"+5", "no sign"},
      {"2 parsecs", "unknown unit \"parsecs\""},
      {"5X", "unknown unit \"x\""},
      {"5KBB", "unknown unit \"kbb\""},
      {"5iB", "unknown unit \"ib\""},
      {"1e9", "unknown unit \"e9\""},
      {"5 M B", "more than a number and a unit"},
      {"1,5G", "unknown unit \",5g\""},
      {"1.2.3", "unknown unit \".3\""},
      {"8EiB", "too large"},  // 2^63, one past the largest
      {"9223372036854775808", "too large"},
      {"99999999999999999999999", "too large"},
      {"10000000TB", "too large"},
      {"1.0000000000000000001K", "more than 18 digits after the decimal point"},
  };
  for (const BadCase& c : cases) {
    const ByteSizeParse size = ParseByteSize(c.text);
    // The message quotes the value and says the reason.
    const std::string quoted = std::string("\"").append(c.text).append("\" is ");
    EXPECT_THAT(size.error, HasSubstr(quoted)) << c.text;
    EXPECT_THAT(size.error, HasSubstr(c.reason)) << c.text;
  }
  // A text that is no size at all also gets the rule.
  EXPECT_THAT(ParseByteSize("lots").error,
              HasSubstr("KiB, MiB, GiB, TiB are 1024-based; KB, MB, GB, TB are 1000-based"));
}

TEST(FormatByteSize, UsesTheLargestWholeBinaryUnitAndReadsBack) {
  EXPECT_EQ(FormatByteSize(0), "0");
  EXPECT_EQ(FormatByteSize(1000), "1000");
  EXPECT_EQ(FormatByteSize(1024), "1KiB");
  EXPECT_EQ(FormatByteSize(1536), "1536");
  EXPECT_EQ(FormatByteSize(256 * kMi), "256MiB");
  EXPECT_EQ(FormatByteSize(kGi), "1GiB");
  EXPECT_EQ(FormatByteSize(int64_t{1} << 50), "1PiB");
  EXPECT_EQ(FormatByteSize(INT64_MAX), "9223372036854775807");
  for (const int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1000}, kKi, 3 * kMi, 5 * kTi,
                              int64_t{1} << 62, INT64_MAX}) {
    EXPECT_EQ(ParseByteSize(FormatByteSize(bytes)).bytes, bytes) << bytes;
  }
}

}  // namespace
}  // namespace feedline
