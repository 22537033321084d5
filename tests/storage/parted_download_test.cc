// DownloadInParts against a real nginx on loopback: the parts run at once,
// the file comes out byte-exact, and a download killed midway resumes each
// part where it stopped (the second run's ranges, from nginx's log, ask
// only for what had not arrived).
#include "src/storage/parted_download.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "src/storage/http_source.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::NginxServer;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

constexpr uint64_t kPart = 64 << 10;
// 17 parts, the last one short.
constexpr uint64_t kSize = 16 * kPart + 1234;

// One GET of the served file from nginx's log: the first byte it asked
// for, the bytes it carried (its range's length), when it began and ended.
struct RangeGet {
  uint64_t first;
  uint64_t bytes;
  double start;
  double end;
};

class PartedDownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 random(11);
    served_.resize(kSize);
    for (uint8_t& byte : served_) byte = static_cast<uint8_t>(random());
    WriteBytes(root_ / "blob.bin", served_);
    server_.Start();
  }

  // The served file, read through `client`.
  HttpSource Blob(const HttpClient& client) const {
    return HttpSource(&client, server_.Url("blob.bin"));
  }
  PartedDownload Download(int parts_at_once) const {
    return {kSize, scratch_ / "blob.part", kPart, parts_at_once};
  }

  // The served file's GETs, in the order they began.
  std::vector<RangeGet> Gets(size_t from_line = 0) const {
    std::vector<RangeGet> gets;
    const std::vector<std::string> log = server_.AccessLog();
    for (size_t i = from_line; i < log.size(); ++i) {
      std::istringstream fields(log[i]);
      std::string connection, method, uri, status, range;
      double end = 0, seconds = 0;
      fields >> connection >> method >> uri >> status >> range >> end >> seconds;
      if (method != "GET" || uri != "/blob.bin") continue;
      // "bytes=FIRST-LAST"
      const size_t dash = range.find('-');
      const uint64_t first = std::stoull(range.substr(6, dash - 6));
      const uint64_t last = std::stoull(range.substr(dash + 1));
      gets.push_back({first, last - first + 1, end - seconds, end});
    }
    std::sort(gets.begin(), gets.end(),
              [](const RangeGet& a, const RangeGet& b) { return a.start < b.start; });
    return gets;
  }

  std::vector<uint8_t> served_;
  TempDir root_;
  TempDir scratch_;
  NginxServer server_{root_.path().string()};
};

TEST_F(PartedDownloadTest, PartsRunAtOnceAndTheFileIsByteExact) {
  server_.Stop();
  server_.set_server_config("limit_rate 512k;");  // each part about 0.13 s
  server_.Start();
  const HttpClient client(testing::QuickRetries());
  EXPECT_EQ(DownloadInParts(Blob(client), Download(/*parts_at_once=*/4)), 0u);
  EXPECT_EQ(ReadBytes(scratch_ / "blob.part"), served_);

  const std::vector<RangeGet> gets = Gets();
  ASSERT_EQ(gets.size(), 17u);
  std::vector<uint64_t> firsts;
  for (const RangeGet& get : gets) firsts.push_back(get.first);
  std::sort(firsts.begin(), firsts.end());
  for (size_t k = 0; k < firsts.size(); ++k) EXPECT_EQ(firsts[k], k * kPart);
  // At once: the most GETs under way at one time (from nginx's times).
  size_t most = 0;
  for (const RangeGet& get : gets) {
    const double at = get.start + 0.01;
    size_t running = 0;
    for (const RangeGet& other : gets) running += other.start <= at && at < other.end;
    most = std::max(most, running);
  }
  EXPECT_GE(most, 3u);
  EXPECT_LE(most, 4u);
  EXPECT_EQ(client.handles_made(), 4u);
}

TEST_F(PartedDownloadTest, AKilledDownloadResumesEachPartWhereItStopped) {
  server_.Stop();
  server_.set_server_config("limit_rate 40k;");  // each part about 1.6 s
  server_.Start();
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      const HttpClient client(testing::QuickRetries());
      DownloadInParts(Blob(client), Download(4));
    } catch (...) {
    }
    _exit(0);
  }
  // Killed once the first parts are partly in.
  const std::string part = scratch_ / "blob.part";
  for (int i = 0; i < 500; ++i) {
    std::error_code ec;
    if (fs::file_size(part, ec) > 3 * kPart && !ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(fs::exists(part + ".progress"));

  server_.Stop();
  const size_t before = server_.AccessLog().size();
  server_.set_server_config("");
  server_.Start();
  const HttpClient client(testing::QuickRetries());
  const uint64_t already = DownloadInParts(Blob(client), Download(4));
  EXPECT_GT(already, 0u);
  EXPECT_LT(already, kSize);
  EXPECT_EQ(ReadBytes(part), served_);
  // The second run asked for what had not arrived, and only that.
  uint64_t asked = 0;
  int resumed_midway = 0;
  for (const RangeGet& get : Gets(before)) {
    asked += get.bytes;
    resumed_midway += get.first % kPart != 0;
  }
  EXPECT_EQ(asked, kSize - already);
  EXPECT_GE(resumed_midway, 1) << "no part was continued from where it stopped";

  FinishDownload(part);
  EXPECT_FALSE(fs::exists(part + ".progress"));
}

TEST_F(PartedDownloadTest, AFileWithoutProgressCountsItsLengthAsReceived) {
  // What a download from the first byte on, one request, leaves.
  const std::string part = scratch_ / "blob.part";
  const uint64_t left = 5 * kPart + 100;
  WriteBytes(part, std::vector<uint8_t>(served_.begin(), served_.begin() + left));
  const HttpClient client(testing::QuickRetries());
  EXPECT_EQ(DownloadInParts(Blob(client), Download(2)), left);
  EXPECT_EQ(ReadBytes(part), served_);
  uint64_t asked = 0;
  for (const RangeGet& get : Gets()) {
    asked += get.bytes;
    EXPECT_GE(get.first, left);
  }
  EXPECT_EQ(asked, kSize - left);
}

TEST_F(PartedDownloadTest, ProgressOfAnotherDownloadIsNotTrusted) {
  const std::string part = scratch_ / "blob.part";
  const HttpClient client(testing::QuickRetries());
  PartedDownload other = Download(2);
  other.part_bytes = 2 * kPart;  // the same file in other parts
  DownloadInParts(Blob(client), other);  // its progress stays beside the file
  ASSERT_EQ(ReadBytes(part), served_);
  // A different part size reads the progress as someone else's: the file
  // is fetched again from the start, whole.
  std::vector<uint8_t> damaged = served_;
  damaged[10] ^= 0xff;
  WriteBytes(part, damaged);
  EXPECT_EQ(DownloadInParts(Blob(client), Download(2)), 0u);
  EXPECT_EQ(ReadBytes(part), served_);
}

TEST_F(PartedDownloadTest, AServerThatIsGoneIsAnErrorNamingTheUrlAndTheProgressIsKept) {
  server_.Stop();
  server_.set_server_config("limit_rate 100k;");
  server_.Start();
  const std::string part = scratch_ / "blob.part";
  std::thread stopper([&] {
    for (int i = 0; i < 500; ++i) {
      std::error_code ec;
      if (fs::file_size(part, ec) > kPart && !ec) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server_.Stop();
  });
  const HttpClient client(testing::QuickRetries());
  try {
    DownloadInParts(Blob(client), Download(4));
    ADD_FAILURE() << "the download ended without its server";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr(server_.Url("blob.bin")));
    EXPECT_THAT(error.what(), HasSubstr("attempts"));
  }
  stopper.join();
  server_.set_server_config("");
  server_.Start();
  EXPECT_GT(DownloadInParts(Blob(client), Download(4)), 0u);
  EXPECT_EQ(ReadBytes(part), served_);
}

TEST(PartedDownload, ZeroPartBytesIsRefusedNamingTheFile) {
  const HttpClient client(testing::QuickRetries());
  EXPECT_THAT([&] {
                const HttpSource nowhere(&client, "http://127.0.0.1:1/x");
                DownloadInParts(nowhere, {10, "/tmp/x.part", 0, 1});
              },
              ::testing::ThrowsMessage<Error>(HasSubstr("/tmp/x.part")));
}

}  // namespace
}  // namespace feedline::storage
