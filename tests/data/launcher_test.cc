#include "feedline/launcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "feedline/error.h"

namespace feedline {
namespace {

using Env = std::map<std::string, std::string>;

LaunchInfo Detect(const Env& env) {
  return DetectLaunch([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string DetectError(const Env& env) {
  try {
    Detect(env);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void ExpectLaunch(const LaunchInfo& info, int64_t rank, int64_t world, int64_t local_rank,
                  int64_t local_world, const std::string& source) {
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.world_size, world);
  EXPECT_EQ(info.local_rank, local_rank);
  EXPECT_EQ(info.local_world_size, local_world);
  EXPECT_EQ(info.source, source);
}

TEST(LauncherTest, NothingSetIsOneProcess) { ExpectLaunch(Detect({}), 0, 1, 0, 1, "single"); }

TEST(LauncherTest, EachLauncherIsRead) {
  ExpectLaunch(
      Detect({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}),
      3, 8, 1, 2, "torchrun");
  ExpectLaunch(Detect({{"PADDLE_TRAINER_ID", "2"},
                       {"PADDLE_TRAINERS_NUM", "4"},
                       {"PADDLE_LOCAL_RANK", "0"},
                       {"PADDLE_LOCAL_SIZE", "2"}}),
               2, 4, 0, 2, "paddle");
  ExpectLaunch(Detect({{"OMPI_COMM_WORLD_RANK", "5"},
                       {"OMPI_COMM_WORLD_SIZE", "6"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}),
               5, 6, 2, 3, "openmpi");
  ExpectLaunch(Detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}), 1, 2, 1, 2, "pmi");
}

TEST(LauncherTest, TheOrderIsTorchrunPaddleOpenMpiPmi) {
  Env env = {{"RANK", "1"},
             {"WORLD_SIZE", "2"},
             {"PADDLE_TRAINER_ID", "2"},
             {"PADDLE_TRAINERS_NUM", "3"},
             {"OMPI_COMM_WORLD_RANK", "3"},
             {"OMPI_COMM_WORLD_SIZE", "4"},
             {"PMI_RANK", "4"},
             {"PMI_SIZE", "5"}};
  EXPECT_EQ(Detect(env).source, "torchrun");
  env.erase("RANK");
  env.erase("WORLD_SIZE");
  EXPECT_EQ(Detect(env).source, "paddle");
  EXPECT_EQ(Detect(env).rank, 2);
  env.erase("PADDLE_TRAINER_ID");
  env.erase("PADDLE_TRAINERS_NUM");
  EXPECT_EQ(Detect(env).source, "openmpi");
  env.erase("OMPI_COMM_WORLD_RANK");
  env.erase("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(Detect(env).source, "pmi");
  EXPECT_EQ(Detect(env).world_size, 5);
}

TEST(LauncherTest, AnEmptyVariableCountsAsUnset) {
  EXPECT_EQ(Detect({{"RANK", ""}, {"WORLD_SIZE", ""}, {"PMI_RANK", "0"}, {"PMI_SIZE", "1"}}).source,
            "pmi");
}

TEST(LauncherTest, MalformedOrInconsistentVariablesNameTheVariable) {
  EXPECT_NE(DetectError({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}).find("RANK=abc is not an integer"),
            std::string::npos);
  EXPECT_NE(DetectError({{"RANK", "1"}, {"WORLD_SIZE", "2x"}}).find("WORLD_SIZE=2x"),
            std::string::npos);
  EXPECT_NE(DetectError({{"RANK", " 1"}, {"WORLD_SIZE", "2"}}).find("RANK= 1 is not an integer"),
            std::string::npos);
  EXPECT_NE(DetectError({{"RANK", "99999999999999999999"}, {"WORLD_SIZE", "2"}})
                .find("is not an integer"),
            std::string::npos);
  const std::string too_big = DetectError({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  EXPECT_NE(too_big.find("RANK=2 must be in [0, WORLD_SIZE) with WORLD_SIZE=2"), std::string::npos)
      << too_big;
  EXPECT_NE(DetectError({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}).find("RANK=-1"), std::string::npos);
  EXPECT_NE(DetectError({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(DetectError({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(DetectError({{"PADDLE_TRAINERS_NUM", "2"}})
                .find("PADDLE_TRAINERS_NUM is set but PADDLE_TRAINER_ID is not"),
            std::string::npos);
  EXPECT_NE(DetectError({{"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}})
                .find("OMPI_COMM_WORLD_LOCAL_RANK=2 must be in [0, OMPI_COMM_WORLD_LOCAL_SIZE)"),
            std::string::npos);
  EXPECT_NE(DetectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}})
                .find("LOCAL_WORLD_SIZE=3 must be in [1, WORLD_SIZE]"),
            std::string::npos);
}

TEST(LauncherTest, ExplicitArgumentsWinOverTheEnvironment) {
  ASSERT_EQ(setenv("RANK", "abc", 1), 0);  // not even read when both are given
  ASSERT_EQ(setenv("WORLD_SIZE", "2", 1), 0);
  ExpectLaunch(ResolveLaunch(4, 3), 3, 4, 3, 4, "explicit");
  EXPECT_THROW(ResolveLaunch(4, std::nullopt), Error);  // RANK=abc is read now
  ASSERT_EQ(setenv("RANK", "1", 1), 0);
  ExpectLaunch(ResolveLaunch(std::nullopt, std::nullopt), 1, 2, 1, 2, "torchrun");
  EXPECT_EQ(ResolveLaunch(std::nullopt, 0).rank, 0);
  EXPECT_EQ(ResolveLaunch(std::nullopt, 0).world_size, 2);
  EXPECT_EQ(ResolveLaunch(8, std::nullopt).rank, 1);
  try {
    ResolveLaunch(std::nullopt, 5);
    ADD_FAILURE() << "rank 5 of 2 accepted";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("rank must be in [0, 2), got 5 (the rank argument, "
                                         "world size from torchrun)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ResolveLaunch(0, 0), Error);
  EXPECT_THROW(ResolveLaunch(2, -1), IndexError);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  ExpectLaunch(ResolveLaunch(std::nullopt, std::nullopt), 0, 1, 0, 1, "single");
}

}  // namespace
}  // namespace feedline
