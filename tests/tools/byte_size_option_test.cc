// Options that take a size in bytes (tools/byte_size_option.h), parsed as the
// command parses them.
#include "tools/byte_size_option.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/source.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Parses `--size VALUE` into an option from 2048 bytes to 1 PiB; returns the
// bytes, or -1 with `error` set.
int64_t ParseSize(const std::string& value, std::string* error = nullptr) {
  CLI::App app;
  int64_t bytes = 4096;
  AddByteSizeOption(&app, "--size", bytes, "A size", 2048, int64_t{1} << 50);
  std::vector<std::string> args = {value, "--size"};  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (error != nullptr) *error = e.what();
    return -1;
  }
  return bytes;
}

TEST(ByteSizeOption, AcceptsEverySpellingOfTheRule) {
  EXPECT_EQ(ParseSize("4096"), 4096);
  EXPECT_EQ(ParseSize("256M"), 256 << 20);
  EXPECT_EQ(ParseSize("256MiB"), 256 << 20);
  EXPECT_EQ(ParseSize("256MB"), 256000000);
  EXPECT_EQ(ParseSize("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(ParseSize("1.5GB"), 1500000000);
  EXPECT_EQ(ParseSize("1.5 g"), int64_t{3} << 29);
  EXPECT_EQ(ParseSize("1PiB"), int64_t{1} << 50);
}

TEST(ByteSizeOption, RefusalsNameTheOptionTheValueAndTheReason) {
  std::string error;
  EXPECT_EQ(ParseSize("lots", &error), -1);
  EXPECT_THAT(error, HasSubstr("--size: \"lots\" is not a size"));
  EXPECT_THAT(error, HasSubstr("KB, MB, GB, TB are 1000-based"));
  EXPECT_EQ(ParseSize("2KB", &error), -1);  // 2000 bytes, under 2048
  EXPECT_THAT(error, HasSubstr("--size: must be from 2KiB to 1PiB, got \"2KB\" (2000 bytes)"));
  EXPECT_EQ(ParseSize("1.1PiB", &error), -1);
  EXPECT_THAT(error, HasSubstr("must be from 2KiB to 1PiB, got \"1.1PiB\""));
  EXPECT_EQ(ParseSize("-3M", &error), -1);
  EXPECT_THAT(error, HasSubstr("--size: \"-3M\" is negative"));
}

TEST(ByteSizeOption, HelpShowsTheDefaultInUnitsAndTheRule) {
  CLI::App app;
  int64_t bytes = int64_t{256} << 20;
  AddByteSizeOption(&app, "--size", bytes, "A size", 1, kMax);
  const std::string help = app.help();
  EXPECT_THAT(help, HasSubstr("--size BYTES=256MiB"));
  EXPECT_THAT(help, HasSubstr("K, M, G, T, KiB, MiB, GiB, TiB are 1024-based"));
}

TEST(ByteSizeOption, MaxFileBytesOfEveryImageCommandTakesTheSameSpellings) {
  CLI::App app;
  SourceLimits limits;
  AddLimitOptions(&app, limits);
  std::vector<std::string> args = {"1.5MB", "--max-file-bytes"};
  app.parse(args);
  EXPECT_EQ(limits.max_file_bytes, 1500000);
  args = {"0", "--max-file-bytes"};
  try {
    app.parse(args);
    ADD_FAILURE() << "--max-file-bytes 0 was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("--max-file-bytes: must be at least 1 byte, got \"0\" (0 bytes)"));
  }
}

}  // namespace
}  // namespace feedline::cli
