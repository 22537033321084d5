// End-to-end tests of the `feedline` command line: help, usage errors and
// exit codes. They run the built binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;
using ::testing::StartsWith;

TEST(Main, HelpOfEveryCommand) {
  for (const std::string command : {"bench", "tune", "verify", "synth"}) {
    const RunResult r = RunFeedline({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.out, HasSubstr("Usage: feedline " + command)) << command;
    EXPECT_EQ(r.err, "") << command;
  }
  const RunResult top = RunFeedline({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const std::string command : {"bench", "tune", "verify", "synth"}) {
    EXPECT_THAT(top.out, HasSubstr(command));
  }
}

TEST(Main, Version) {
  const RunResult r = RunFeedline({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, StartsWith("feedline "));
}

// stderr holds exactly one line.
void ExpectOneLine(const RunResult& r) {
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n') << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(Main, NoCommand) {
  const RunResult r = RunFeedline({});
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLine(r);
  EXPECT_THAT(r.err, StartsWith("feedline: error: "));
}

TEST(Main, UnknownCommand) {
  const RunResult r = RunFeedline({"bnech", "x"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLine(r);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'bnech': use bench, tune, verify, synth or pack"));
}

struct BadLine {
  std::vector<std::string> args;
  std::string message;  // expected in the error line
};

// Test names show the command line.
void PrintTo(const BadLine& line, std::ostream* out) {
  *out << "feedline";
  for (const std::string& arg : line.args) *out << ' ' << arg;
}

class BadCommandLine : public ::testing::TestWithParam<BadLine> {};

TEST_P(BadCommandLine, OneLineNamingTheOptionAndWhatIsAllowed) {
  const BadLine& c = GetParam();
  const RunResult r = RunFeedline(c.args);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLine(r);
  EXPECT_THAT(r.err, HasSubstr(c.message));
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Main, BadCommandLine,
    ::testing::Values(
        BadLine{{"bench", "--synthetic", "10", "--workers", "x"},
                "feedline bench: error: --workers: must be an integer from 0 to 4096 or 'auto', "
                "got 'x'"},
        BadLine{{"bench", "dir", "--pipeline", "foo"},
                "feedline bench: error: --pipeline: must be one of train, val, decode or read, got "
                "'foo'"},
        BadLine{{"bench", "--synthetic", "10", "--batch", "0"},
                "feedline bench: error: --batch: must be an integer >= 1, got '0'"},
        BadLine{{"bench", "--synthetic", "10", "--step-ms=-3"},
                "feedline bench: error: --step-ms: must be a number >= 0, got '-3'"},
        BadLine{{"bench", "--synthetic", "10", "--error-policy", "ignore"},
                "feedline bench: error: --error-policy: must be one of raise, skip or replace, got "
                "'ignore'"},
        BadLine{{"bench", "--synthetic", "10", "--prefetch", "0"},
                "--prefetch: must be an integer >= 1 or 'auto', got '0'"},
        BadLine{{"bench", "--synthetic", "x"}, "--synthetic: must be an integer >= 1, got 'x'"},
        BadLine{{"bench", "--synthetic", "10", "--bogus"},
                "feedline bench: error: unknown option --bogus"},
        BadLine{{"bench", "--synthetic", "10", "--epochs"},
                "feedline bench: error: --epochs: needs a value"},
        BadLine{{"bench", "--synthetic", "10", "--pipeline", "val"},
                "--synthetic excludes --pipeline"},
        BadLine{{"bench", "dir", "--synthetic", "10"},
                "give either SOURCE or --synthetic N, not both"},
        BadLine{{"tune", "dir", "--prefetch", "1,0"},
                "feedline tune: error: --prefetch: must be an integer >= 1, got '0'"},
        BadLine{{"tune", "dir", "--max-batches", "0"},
                "feedline tune: error: --max-batches: must be an integer >= 1"},
        BadLine{{"verify", "dir", "--threads", "many"},
                "feedline verify: error: --threads: must be an integer from 0"},
        BadLine{{"synth", "dir", "--images", "0", "--classes", "2"},
                "feedline synth: error: --images: must be an integer >= 1"},
        BadLine{{"synth", "dir", "--classes", "2"}, "feedline synth: error: --images is required"},
        BadLine{{"synth", "--images", "3", "--classes", "2"},
                "feedline synth: error: DIR is required"}));

TEST(Main, MissingSource) {
  for (const std::string command : {"bench", "tune", "verify"}) {
    const RunResult r = RunFeedline({command});
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneLine(r);
    EXPECT_THAT(r.err, HasSubstr("feedline " + command + ": error: SOURCE is required"));
  }
}

TEST(Main, SourceThatDoesNotExist) {
  ScratchDir dir;
  const std::string missing = dir / "nothing here";
  for (const std::string command : {"bench", "tune", "verify"}) {
    const RunResult r = RunFeedline({command, missing});
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneLine(r);
    EXPECT_THAT(r.err, HasSubstr("SOURCE '" + missing + "' does not exist"));
  }
}

TEST(Main, EmptySources) {
  ScratchDir dir;
  const std::string empty_folder = dir / "empty";
  std::filesystem::create_directory(empty_folder);
  const std::string empty_list = dir / "list.txt";
  std::ofstream(empty_list).close();
  const std::string no_images = dir / "no_images";
  std::filesystem::create_directories(no_images + "/cats");
  std::ofstream(no_images + "/cats/readme.txt") << "not an image\n";

  for (const std::string command : {"bench", "tune", "verify"}) {
    RunResult r = RunFeedline({command, empty_folder});
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneLine(r);
    EXPECT_THAT(r.err, HasSubstr("'" + empty_folder + "' is an empty folder"));

    r = RunFeedline({command, empty_list});
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneLine(r);
    EXPECT_THAT(r.err, HasSubstr("'" + empty_list + "' is an empty file list"));

    r = RunFeedline({command, no_images});
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneLine(r);
    EXPECT_THAT(r.err, HasSubstr("no image files"));
  }
}

}  // namespace
}  // namespace feedline::cli
