// The errors a user catches: what a SampleError says and carries, and the
// copies the loader makes of it (WithIndex, TimeoutError).
#include "feedline/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace feedline {
namespace {

using ::testing::HasSubstr;

TEST(SampleError, SaysIndexSourceKindAndMessage) {
  const SampleError e(FailureKind::kDecode, "/data/cat.jpg", "bad Huffman table", 17);
  EXPECT_STREQ(e.what(), "sample 17 (/data/cat.jpg): decode: bad Huffman table");
  EXPECT_EQ(e.kind(), FailureKind::kDecode);
  EXPECT_EQ(e.reason(), "decode");
  EXPECT_EQ(e.source(), "/data/cat.jpg");
  EXPECT_EQ(e.message(), "bad Huffman table");
  EXPECT_EQ(e.index(), 17);
}

TEST(SampleError, LeavesOutWhatIsNotKnown) {
  EXPECT_STREQ(SampleError(FailureKind::kIo, "", "short read").what(), "sample: io: short read");
  EXPECT_STREQ(SampleError(FailureKind::kIo, "shard-3.tar", "short read").what(),
               "sample (shard-3.tar): io: short read");
  EXPECT_EQ(SampleError(FailureKind::kIo, "", "x").index(), -1);
}

TEST(SampleError, WithIndexKeepsEverythingElseAndRewritesTheText) {
  FailureOrigin origin;
  origin.exception_type = "mypkg.errors.BadRecord";
  const SampleError without(FailureKind::kException, "row 9", "boom", -1, origin);
  const SampleError with = without.WithIndex(9);
  EXPECT_EQ(with.index(), 9);
  EXPECT_EQ(with.kind(), FailureKind::kException);
  EXPECT_EQ(with.source(), "row 9");
  EXPECT_EQ(with.message(), "boom");
  EXPECT_EQ(with.origin().exception_type, "mypkg.errors.BadRecord");
  EXPECT_STREQ(with.what(), "sample 9 (row 9): exception: boom");
  // The original is unchanged.
  EXPECT_EQ(without.index(), -1);
}

TEST(SampleError, IsCaughtAsAnError) {
  try {
    throw SampleError(FailureKind::kShape, "s", "m", 1);
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("shape: m"));
    return;
  }
  FAIL() << "a SampleError is an Error";
}

TEST(TimeoutError, NamesTheLimitInSecondsAsWritten) {
  const TimeoutError e(4, "/data/slow.jpg", 0.25);
  EXPECT_EQ(e.kind(), FailureKind::kTimeout);
  EXPECT_EQ(e.index(), 4);
  EXPECT_STREQ(e.what(),
               "sample 4 (/data/slow.jpg): timeout: took longer than the loader timeout of 0.25 s");
  EXPECT_THAT(TimeoutError(0, "", 1.0).what(), HasSubstr("timeout of 1 s"));
}

TEST(TimeoutError, FromASampleErrorKeepsItsText) {
  const SampleError timeout = TimeoutError(2, "src", 3).WithIndex(5);
  const TimeoutError again(timeout);
  EXPECT_EQ(again.index(), 5);
  EXPECT_STREQ(again.what(), timeout.what());
}

TEST(OsError, CarriesTheErrnoAndThePath) {
  const OsError e(2, "/missing", "/missing: No such file or directory");
  EXPECT_EQ(e.error_number(), 2);
  EXPECT_EQ(e.path(), "/missing");
  EXPECT_STREQ(e.what(), "/missing: No such file or directory");
}

TEST(WorkerInitError, NamesTheWorkerAndTheCause) {
  const WorkerInitError e(3, "no GPU");
  EXPECT_EQ(e.worker(), 3);
  EXPECT_STREQ(e.what(), "worker_init failed in worker 3: no GPU");
}

}  // namespace
}  // namespace feedline
