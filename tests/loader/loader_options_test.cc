// The names of the loader's policies and modes, as the command line and the
// Python arguments spell them, read back by the parsers.
#include "feedline/loader_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/error.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

TEST(ErrorPolicy, NamesReadBack) {
  for (const ErrorPolicy p : {ErrorPolicy::kRaise, ErrorPolicy::kSkip, ErrorPolicy::kReplace}) {
    EXPECT_EQ(ParseErrorPolicy(ErrorPolicyName(p)), p);
  }
  EXPECT_STREQ(ErrorPolicyName(ErrorPolicy::kRaise), "raise");
  EXPECT_STREQ(ErrorPolicyName(ErrorPolicy::kSkip), "skip");
  EXPECT_STREQ(ErrorPolicyName(ErrorPolicy::kReplace), "replace");
}

TEST(ErrorPolicy, AnUnknownNameIsRefusedListingTheChoices) {
  try {
    ParseErrorPolicy("Skip");
    FAIL() << "names are case-sensitive";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("error_policy must be raise, skip or replace, got 'Skip'"));
  }
}

TEST(WorkerMode, NamesReadBack) {
  for (const WorkerMode m : {WorkerMode::kThread, WorkerMode::kProcess, WorkerMode::kAuto}) {
    EXPECT_EQ(ParseWorkerMode(WorkerModeName(m)), m);
  }
  EXPECT_STREQ(WorkerModeName(WorkerMode::kThread), "thread");
  EXPECT_STREQ(WorkerModeName(WorkerMode::kProcess), "process");
  EXPECT_STREQ(WorkerModeName(WorkerMode::kAuto), "auto");
}

TEST(WorkerMode, AnUnknownNameIsRefusedListingTheChoices) {
  try {
    ParseWorkerMode("threads");
    FAIL() << "'threads' is no mode";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("worker_mode must be thread, process or auto, got 'threads'"));
  }
}

}  // namespace
}  // namespace feedline
