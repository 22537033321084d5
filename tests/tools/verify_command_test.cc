#include "tools/verify_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "feedline/error.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

// Sample i is broken when i % 7 == 3 (a SampleError whose reason depends on
// i) or i == 20 (a plain exception).
class FlakyDataset : public Dataset {
 public:
  int64_t size() const override { return 50; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index % 7 == 3) {
      throw SampleError(index % 2 ? FailureKind::kDecode : FailureKind::kFormat, Source(index),
                        "bad bytes");
    }
    if (index == 20) throw std::runtime_error("boom");
    out.SetScalar<int64_t>("x", index);
  }
  std::string Source(int64_t index) const override {
    char name[32];
    std::snprintf(name, sizeof(name), "img%03lld.jpg", static_cast<long long>(index));
    return name;
  }
};

TEST(FindBrokenSamples, FindsExactlyTheBrokenOnesSortedByPath) {
  for (int threads : {1, 3}) {
    const std::vector<BrokenFile> broken = FindBrokenSamples(FlakyDataset(), threads);
    std::vector<int64_t> expected;
    for (int64_t i = 0; i < 50; ++i) {
      if (i % 7 == 3 || i == 20) expected.push_back(i);
    }
    ASSERT_EQ(broken.size(), expected.size()) << threads << " threads";
    for (size_t k = 0; k < broken.size(); ++k) {
      EXPECT_EQ(broken[k].index, expected[k]);
      EXPECT_EQ(broken[k].path, FlakyDataset().Source(expected[k]));
      if (expected[k] == 20) {
        EXPECT_EQ(broken[k].reason, "exception");
        EXPECT_EQ(broken[k].message, "boom");
      } else {
        EXPECT_EQ(broken[k].reason, expected[k] % 2 ? "decode" : "format");
        EXPECT_EQ(broken[k].message, "bad bytes");
      }
    }
  }
}

TEST(FindBrokenSamples, ReportsProgressUpToTheTotal) {
  int64_t last = 0;
  FindBrokenSamples(FlakyDataset(), 2, [&](int64_t done) { last = std::max(last, done); });
  EXPECT_EQ(last, 50);
}

// End to end: the broken files that `synth` plants are exactly those that
// `verify` lists.
TEST(VerifyCommand, FindsEveryPlantedBrokenFileAndNothingElse) {
  testing::ScratchDir dir;
  const testing::RunResult synth =
      testing::RunFeedline({"synth", dir / "imgs", "--images", "24", "--classes", "4", "--broken",
                            "7", "--seed", "3", "--json"});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  std::set<std::string> planted;
  const nlohmann::json written = synth.Json();
  for (const auto& path : written["broken"]) planted.insert(path.get<std::string>());
  ASSERT_EQ(planted.size(), 7u);

  const testing::RunResult r = testing::RunFeedline({"verify", dir / "imgs", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = r.Json();
  std::set<std::string> found;
  for (const auto& file : j["broken"]) {
    found.insert(file["path"].get<std::string>());
    EXPECT_FALSE(file["reason"].get<std::string>().empty());
    EXPECT_FALSE(file["message"].get<std::string>().empty());
  }
  EXPECT_EQ(found, planted);
  EXPECT_EQ(j["files"], 31);
  EXPECT_EQ(j["ok"], 24);
  int64_t by_reason = 0;
  for (const auto& [reason, count] : j["by_reason"].items()) by_reason += count.get<int64_t>();
  EXPECT_EQ(by_reason, 7);

  // The text lists each broken file on a line of its own, then a summary.
  int broken_lines = 0;
  for (const std::string& line : testing::RunResult::Lines(r.out)) {
    if (line.rfind("broken: ", 0) == 0) {
      ++broken_lines;
      EXPECT_EQ(planted.count(line.substr(8, line.find(": ", 8) - 8)), 1u) << line;
    }
  }
  EXPECT_EQ(broken_lines, 7);
  EXPECT_THAT(r.out, ::testing::HasSubstr("feedline verify: 31 files, 24 ok, 7 broken ("));
}

TEST(VerifyCommand, CleanFolderPasses) {
  testing::ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 12);
  const testing::RunResult r = testing::RunFeedline({"verify", dir / "imgs", "--threads", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "feedline verify: 12 files, 12 ok, 0 broken\n");
}

TEST(VerifyCommand, FileListWithAMissingFile) {
  testing::ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 4);
  std::ofstream list(dir / "list.txt");
  for (const std::string& file : testing::FilesUnder(dir / "imgs"))
    list << "imgs/" << file << " 0\n";
  list << "imgs/missing.jpg 1\n";
  list.close();
  const testing::RunResult r = testing::RunFeedline({"verify", dir / "list.txt", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = r.Json();
  ASSERT_EQ(j["broken"].size(), 1u);
  EXPECT_EQ(j["broken"][0]["reason"], "io");
  EXPECT_THAT(j["broken"][0]["path"].get<std::string>(), ::testing::HasSubstr("imgs/missing.jpg"));
  EXPECT_EQ(j["files"], 5);
}

}  // namespace
}  // namespace feedline::cli
