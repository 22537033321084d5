// End-to-end tests of `feedline pack SOURCE s3://BUCKET/PREFIX/` against a
// real SeaweedFS on loopback: a pack killed (SIGKILL) partway and run again
// ends as the local pack, which `feedline verify` and ShardDataset read back
// from the bucket; wrong credentials fail at once; an http(s) OUT and
// --staging with a local OUT are usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedline/storage/shard_dataset.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/s3_test_environment.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::MakeImageFolder;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

// Starts `feedline args...` (output to /dev/null) and kills it with SIGKILL
// once `file` exists, or when it ends by itself.
void KillFeedlineOnceFileExists(const std::vector<std::string>& args, const std::string& file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> strings = {testing::kFeedlineBinary};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, testing::kFeedlineBinary, &actions, nullptr, argv.data(), environ),
            0);
  posix_spawn_file_actions_destroy(&actions);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (fs::exists(file) || std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::shared_ptr<storage::ShardDataset> OpenPackedShards(const std::string& location) {
  return std::make_shared<storage::ShardDataset>(storage::ShardDataset::Find(location),
                                                 vision::TrainPipeline(40, DType::kU8));
}

TEST(PackToS3Command, AKilledPackRunAgainEndsAsTheLocalPackAndReadsBack) {
  storage::testing::SeaweedFsServer server;
  server.Start();
  const storage::testing::S3TestEnvironment env(server);
  ScratchDir dir;
  MakeImageFolder(dir / "images", 48);
  const std::vector<std::string> options = {"--shard-size", "60K", "--threads", "1"};
  std::vector<std::string> local = {"pack", dir / "images", dir / "local", "--json"};
  local.insert(local.end(), options.begin(), options.end());
  const RunResult packed = RunFeedline(local);
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  ASSERT_GT(packed.Json()["shards"].get<int>(), 10);

  std::vector<std::string> upload = {"pack", dir / "images", "s3://feedline/cli/", "--staging",
                                     dir / "staging", "--json"};
  upload.insert(upload.end(), options.begin(), options.end());
  // Killed once its second shard is finished (uploaded, or on its way).
  KillFeedlineOnceFileExists(upload, dir / "staging/shard-000001.idx");
  const RunResult resumed = RunFeedline(upload);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("in s3://feedline/cli/"));
  // The kill came midway (about one image a shard: tens of shards to go).
  EXPECT_LT(resumed.Json()["reused_shards"].get<int>(), resumed.Json()["shards"].get<int>());
  EXPECT_EQ(resumed.Json()["records"], 48);
  EXPECT_EQ(resumed.Json()["shards"], packed.Json()["shards"]);
  EXPECT_EQ(resumed.Json()["bytes"], packed.Json()["bytes"]);

  const RunResult verified = RunFeedline({"verify", "s3://feedline/cli/"});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_THAT(verified.out, HasSubstr("48 files, 48 ok, 0 broken"));
  EXPECT_EQ(storage::testing::BatchesOf(OpenPackedShards("s3://feedline/cli/"), 2),
            storage::testing::BatchesOf(OpenPackedShards(dir / "local"), 0));

  // Wrong credentials: one clear error, at once.
  setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
  const auto start = std::chrono::steady_clock::now();
  const RunResult denied = RunFeedline(
      {"pack", dir / "images", "s3://feedline/denied/", "--staging", dir / "denied-staging"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err, HasSubstr("s3://feedline/denied/pack.txt: HTTP 403 "
                                    "SignatureDoesNotMatch (access refused"));
}

TEST(PackToS3Command, AnHttpOutOrStagingForALocalOutIsAUsageError) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 4);
  const RunResult http = RunFeedline({"pack", dir / "images", "http://127.0.0.1:1/train/"});
  EXPECT_EQ(http.exit_code, 2);
  EXPECT_THAT(http.err, HasSubstr("is an http(s) URL: a pack goes to a local folder or to s3://"));
  const RunResult staging =
      RunFeedline({"pack", dir / "images", dir / "out", "--staging", dir / "staging"});
  EXPECT_EQ(staging.exit_code, 2);
  EXPECT_THAT(staging.err, HasSubstr("--staging is the local folder of a pack uploaded to s3://"));
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace feedline::cli
