// HTTPS through the API users call: a real nginx on loopback with a
// certificate that the test makes (openssl), feedline given its CA
// (RemoteOptions::ca_file, or SSL_CERT_FILE): the batches are the local
// pack's; a server whose certificate another CA signed fails at once, in
// one attempt, with an error naming the URL and the TLS error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/net_namespace.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::BatchesOf;
using testing::NginxServer;
using testing::Shell;
using testing::TempDir;

constexpr int64_t kHttpsImages = 12;

// A self-signed certificate for 127.0.0.1 (its own CA) and its key.
void MakeCertificate(const std::string& certificate, const std::string& key) {
  std::string output;
  const int status = Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
                           " -addext subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " +
                               certificate,
                           &output);
  ASSERT_EQ(status, 0) << "openssl: " << output;
}

class HttpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", kHttpsImages, /*classes=*/3, /*seed=*/4,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    ASSERT_GE(PackSource(*folder_ / "images", *folder_ / "pack", options).shards, 2);
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }

  void SetUp() override {
    fs::copy(*folder_ / "pack", root_ / "train", fs::copy_options::recursive);
    MakeCertificate(keys_ / "server.pem", keys_ / "server.key");
    MakeCertificate(keys_ / "other.pem", keys_ / "other.key");
    server_.set_tls(keys_ / "server.pem", keys_ / "server.key");
    server_.Start();
  }

  static std::shared_ptr<ShardDataset> Open(const std::string& url, const RemoteOptions& remote) {
    return std::make_shared<ShardDataset>(ShardDataset::Find(url, remote),
                                          vision::TrainPipeline(32, DType::kU8),
                                          std::vector<std::string>{}, 0, remote);
  }

  static TempDir* folder_;
  TempDir root_;
  TempDir keys_;
  TempDir cache_;
  NginxServer server_{root_.path().string()};
};

TempDir* HttpsTest::folder_ = nullptr;

TEST_F(HttpsTest, APackServedOverHttpsWithItsCaGivesTheLocalBatches) {
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(*folder_ / "pack"),
                                                    vision::TrainPipeline(32, DType::kU8));
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  ASSERT_EQ(server_.Url().rfind("https://127.0.0.1:", 0), 0u);
  RemoteOptions remote;
  remote.ca_file = keys_ / "server.pem";
  EXPECT_EQ(BatchesOf(Open(server_.Url("train/"), remote), 2), want);
  remote.cache_dir = cache_ / "cache";
  EXPECT_EQ(BatchesOf(Open(server_.Url("train/"), remote), 2), want);
  if (testing::kWorkerProcesses) {
    EXPECT_EQ(BatchesOf(Open(server_.Url("train/"), remote), 2, WorkerMode::kProcess), want);
  }
  // The CA from the environment's SSL_CERT_FILE.
  ::setenv("SSL_CERT_FILE", (keys_ / "server.pem").c_str(), 1);
  const std::vector<std::vector<uint8_t>> from_env =
      BatchesOf(Open(server_.Url("train/"), RemoteOptions{}), 1);
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(from_env, want);
}

TEST_F(HttpsTest, AWrongCaFailsAtOnceNamingTheUrlAndTheTlsError) {
  RemoteOptions remote;
  remote.ca_file = keys_ / "other.pem";
  remote.max_attempts = 5;
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    Open(server_.Url("train/"), remote);
  } catch (const Error& e) {
    message = e.what();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(message, HasSubstr(server_.Url("train/pack.txt")));
  EXPECT_THAT(message, HasSubstr("SSL certificate problem"));
  EXPECT_THAT(message, HasSubstr("(1 attempt in "));
  EXPECT_LT(seconds, 5);
  // Without a CA that knows it, the system's store refuses it the same way.
  std::string system;
  try {
    Open(server_.Url("train/"), RemoteOptions{});
  } catch (const Error& e) {
    system = e.what();
  }
  EXPECT_THAT(system, HasSubstr("SSL certificate problem"));
}

TEST_F(HttpsTest, AMissingCaFileIsAnErrorNamingIt) {
  RemoteOptions remote;
  remote.ca_file = keys_ / "missing.pem";
  EXPECT_THAT([&] { Open(server_.Url("train/"), remote); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("remote options: ca_file " + keys_ / "missing.pem" +
                            ": cannot read the CA certificates: No such file or directory")));
  ::setenv("SSL_CERT_FILE", (keys_ / "missing.pem").c_str(), 1);
  std::string message;
  try {
    Open(server_.Url("train/"), RemoteOptions{});
  } catch (const Error& e) {
    message = e.what();
  }
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_THAT(message, HasSubstr("SSL_CERT_FILE " + keys_ / "missing.pem"));
}

}  // namespace
}  // namespace feedline::storage
