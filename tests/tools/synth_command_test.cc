// End-to-end tests of `feedline synth`: they run the built binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using testing::FilesUnder;
using ::testing::HasSubstr;
using testing::ReadWhole;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

TEST(SynthCommand, WritesAnImageFolder) {
  ScratchDir dir;
  const RunResult r = RunFeedline(
      {"synth", dir / "out", "--images", "12", "--classes", "3", "--broken", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["images"], 12);
  EXPECT_EQ(j["classes"], 3);
  ASSERT_EQ(j["broken"].size(), 2u);
  const std::vector<std::string> files = FilesUnder(dir / "out");
  EXPECT_EQ(files.size(), 14u);
  std::set<std::string> classes;
  for (const std::string& file : files) classes.insert(file.substr(0, file.find('/')));
  EXPECT_EQ(classes, (std::set<std::string>{"class_000", "class_001", "class_002"}));
  for (const auto& path : j["broken"])
    EXPECT_TRUE(std::filesystem::exists(path.get<std::string>()));
  EXPECT_THAT(r.out,
              HasSubstr("wrote 12 images in 3 classes and 2 broken files to " + (dir / "out")));
}

TEST(SynthCommand, TheSeedDecidesTheBytes) {
  ScratchDir dir;
  for (const std::string& name : {"a", "b"}) {
    ASSERT_EQ(RunFeedline({"synth", dir / name, "--images", "3", "--classes", "1", "--seed", "5"})
                  .exit_code,
              0);
  }
  ASSERT_EQ(
      RunFeedline({"synth", dir / "c", "--images", "3", "--classes", "1", "--seed", "6"}).exit_code,
      0);
  const std::vector<std::string> files = FilesUnder(dir / "a");
  ASSERT_EQ(files.size(), 3u);
  ASSERT_EQ(FilesUnder(dir / "c"), files);
  for (const std::string& file : files) {
    EXPECT_EQ(ReadWhole(dir / ("a/" + file)), ReadWhole(dir / ("b/" + file))) << file;
    EXPECT_NE(ReadWhole(dir / ("a/" + file)), ReadWhole(dir / ("c/" + file))) << file;
  }
}

TEST(SynthCommand, RefusesAFolderInUseUnlessForced) {
  ScratchDir dir;
  ASSERT_EQ(RunFeedline({"synth", dir / "out", "--images", "1", "--classes", "1"}).exit_code, 0);
  const RunResult again = RunFeedline({"synth", dir / "out", "--images", "1", "--classes", "1"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("is not empty (pass --force"));
  EXPECT_EQ(
      RunFeedline({"synth", dir / "out", "--images", "1", "--classes", "1", "--force"}).exit_code,
      0);
}

}  // namespace
}  // namespace feedline::cli
