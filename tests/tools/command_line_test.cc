#include "tools/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;

// The validator's message for `text`; empty when it is accepted.
std::string Check(const CLI::Validator& validator, std::string text) { return validator(text); }

TEST(Validators, IntAtLeast) {
  EXPECT_EQ(Check(IntAtLeast(1), "64"), "");
  EXPECT_EQ(Check(IntAtLeast(1), "0"), "must be an integer >= 1, got '0'");
  EXPECT_EQ(Check(IntAtLeast(1), "abc"), "must be an integer >= 1, got 'abc'");
  EXPECT_EQ(Check(IntAtLeast(1), "3.5"), "must be an integer >= 1, got '3.5'");
  EXPECT_EQ(Check(IntAtLeast(0), ""), "must be an integer >= 0, got ''");
}

TEST(Validators, NumberAtLeast) {
  EXPECT_EQ(Check(NumberAtLeast(0), "2.5"), "");
  EXPECT_EQ(Check(NumberAtLeast(0), "0"), "");
  EXPECT_EQ(Check(NumberAtLeast(0), "-1"), "must be a number >= 0, got '-1'");
  EXPECT_EQ(Check(NumberAtLeast(0), "10ms"), "must be a number >= 0, got '10ms'");
}

TEST(Validators, OneOf) {
  const CLI::Validator pipeline = OneOf({"train", "val", "decode"});
  EXPECT_EQ(Check(pipeline, "val"), "");
  EXPECT_EQ(Check(pipeline, "Val"), "must be one of train, val or decode, got 'Val'");
}

TEST(Validators, Workers) {
  EXPECT_EQ(Check(WorkersValue(), "auto"), "");
  EXPECT_EQ(Check(WorkersValue(), "0"), "");
  EXPECT_EQ(Check(WorkersValue(), "16"), "");
  EXPECT_THAT(Check(WorkersValue(), "-1"), HasSubstr("'auto', got '-1'"));
  EXPECT_THAT(Check(WorkersValue(), "many"), HasSubstr("got 'many'"));
}

TEST(ParseWorkers, AutoIsOnePerCpu) {
  EXPECT_GE(CpuCount(), 1);
  EXPECT_EQ(ParseWorkers("auto"), CpuCount());
  EXPECT_EQ(ParseWorkers("3"), 3);
}

// Parses `args` with an app that has one validated option and returns the
// one-line error, or "" if parsing succeeded.
std::string ParseLine(std::vector<std::string> args) {
  CLI::App app("test", "feedline");
  CLI::App* bench = app.add_subcommand("bench");
  int batch = 0;
  bench->add_option("--batch", batch)->check(IntAtLeast(1));
  std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ParseErrorLine("feedline bench", e);
  }
  return "";
}

TEST(ParseErrorLine, NamesTheOptionAndWhatIsAllowed) {
  EXPECT_EQ(ParseLine({"bench", "--batch", "2"}), "");
  EXPECT_EQ(ParseLine({"bench", "--batch", "0"}),
            "feedline bench: error: --batch: must be an integer >= 1, got '0' (see 'feedline bench "
            "--help')");
  EXPECT_EQ(ParseLine({"bench", "--batch"}),
            "feedline bench: error: --batch: needs a value (see 'feedline bench --help')");
  EXPECT_EQ(ParseLine({"bench", "--bacth", "2"}),
            "feedline bench: error: unknown option --bacth (see 'feedline bench --help')");
  EXPECT_EQ(ParseLine({"bench", "--bacth=2"}),
            "feedline bench: error: unknown option --bacth (see 'feedline bench --help')");
  EXPECT_EQ(ParseLine({"bench", "extra"}),
            "feedline bench: error: unexpected argument 'extra' (see 'feedline bench --help')");
}

TEST(UnknownCommandLine, ListsTheCommands) {
  EXPECT_EQ(UnknownCommandLine("bnech", {"bench", "tune", "verify"}),
            "feedline: error: unknown command 'bnech': use bench, tune or verify (see 'feedline "
            "--help')");
}

}  // namespace
}  // namespace feedline::cli
