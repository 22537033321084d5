#include "src/storage/http_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::NginxServer;
using testing::TempDir;
using testing::WriteBytes;

// Quick retries, so that the failing cases end in about a second (retries
// go on for the whole budget).
RemoteOptions Quick(int attempts = 3) {
  RemoteOptions options;
  options.max_attempts = attempts;
  options.backoff_s = 0.01;
  options.connect_timeout_s = 2;
  options.stall_timeout_s = 2;
  options.retry_budget_s = 1;
  return options;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string MessageOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no Error thrown";
  return {};
}

// How many requests for `uri` the server saw (waiting for `expected`).
size_t Requests(const NginxServer& server, const std::string& uri, size_t expected) {
  return server.Requests(uri, expected);
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_.resize(100000);
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<uint8_t>(i * 7 + i / 251);
    WriteBytes(root_ / "blob.bin", bytes_);
    server_.Start();
  }

  TempDir root_;
  NginxServer server_{root_.path().string()};
  std::vector<uint8_t> bytes_;
};

TEST_F(HttpClientTest, RangesWholeFilesAndSizesAreTheServedBytes) {
  const HttpClient client(Quick());
  const std::string url = server_.Url("blob.bin");
  for (const auto& [offset, size] : std::vector<std::pair<size_t, size_t>>{
           {0, 1}, {0, 512}, {511, 2}, {4096, 50000}, {99999, 1}, {0, 100000}}) {
    std::vector<uint8_t> got(size);
    client.ReadRange(url, offset, size, got.data());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes_.begin() + offset)) << offset;
  }
  EXPECT_EQ(client.ReadAll(url, 1 << 20), bytes_);
  EXPECT_EQ(client.Size(url), bytes_.size());
  EXPECT_EQ(client.ReadAll(server_.Url("absent.bin"), 1 << 20), std::nullopt);
  EXPECT_EQ(client.Size(server_.Url("absent.bin")), std::nullopt);
}

// Keep-alive: one thread's requests go over one connection; threads reading
// at once take a handle (and a connection) each.
TEST_F(HttpClientTest, ConnectionsAreReusedOnePerConcurrentThread) {
  const HttpClient client(Quick());
  std::vector<uint8_t> got(1000);
  for (int i = 0; i < 50; ++i) client.ReadRange(server_.Url("blob.bin"), i * 1000, 1000, got.data());
  EXPECT_EQ(server_.AccessLog(50).size(), 50u);
  EXPECT_EQ(server_.Connections(), 1u);
  EXPECT_EQ(client.handles_made(), 1u);

  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> mine(100);
      for (int i = 0; i < 100; ++i) {
        const size_t offset = static_cast<size_t>(t * 20000 + i * 100);
        client.ReadRange(server_.Url("blob.bin"), offset, 100, mine.data());
        ASSERT_TRUE(std::equal(mine.begin(), mine.end(), bytes_.begin() + offset));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(server_.AccessLog(450).size(), 450u);
  EXPECT_LE(client.handles_made(), 4u);
  EXPECT_LE(server_.Connections(), 4u);
}

TEST_F(HttpClientTest, NotFoundAndAccessRefusedFailAtOnce) {
  const HttpClient client(Quick(5));
  std::vector<uint8_t> got(10);
  const std::string missing = MessageOf([&] {
    client.ReadRange(server_.Url("absent.bin"), 0, 10, got.data());
  });
  EXPECT_THAT(missing, HasSubstr(server_.Url("absent.bin") + ": bytes 0-9: HTTP 404 (not found)"));
  EXPECT_EQ(Requests(server_, "/absent.bin", 1), 1u);

  const std::string refused =
      MessageOf([&] { client.ReadAll(server_.Url("status/403"), 1 << 20); });
  EXPECT_THAT(refused, HasSubstr(server_.Url("status/403") + ": HTTP 403 (access refused"));
  EXPECT_THAT(refused, HasSubstr("(1 attempt in "));
  EXPECT_EQ(Requests(server_, "/status/403", 1), 1u);
}

TEST_F(HttpClientTest, AGoneAnswerIsNamedAsItWasGiven) {
  const HttpClient client(Quick(5));
  std::vector<uint8_t> got(10);
  EXPECT_THAT(MessageOf([&] { client.ReadRange(server_.Url("status/410"), 0, 10, got.data()); }),
              HasSubstr(server_.Url("status/410") + ": bytes 0-9: HTTP 410 (gone)"));
  long status = 0;
  EXPECT_FALSE(client.ReadAll(server_.Url("status/410"), 1 << 20, &status));
  EXPECT_EQ(status, 410);
  EXPECT_FALSE(client.Size(server_.Url("absent.bin"), &status));
  EXPECT_EQ(status, 404);
  EXPECT_EQ(HttpClient::NotFoundText(410), "HTTP 410 (gone)");
  EXPECT_EQ(Requests(server_, "/status/410", 2), 2u);  // neither retried
}

// Retried for the whole budget, at least max_attempts times, each request
// on its own: an HTTP answer, if only an error, shows the server is there.
TEST_F(HttpClientTest, ServerErrorsAndThrottlingAreRetriedForTheWholeBudget) {
  const HttpClient client(Quick(3));
  std::vector<uint8_t> got(10);
  auto start = std::chrono::steady_clock::now();
  const std::string failing = MessageOf([&] {
    client.ReadRange(server_.Url("status/503"), 0, 10, got.data());
  });
  // Past max_attempts (3): the waits double from 10 ms until the next one
  // would end past the budget.
  EXPECT_GE(SecondsSince(start), 0.3);
  EXPECT_THAT(failing, HasSubstr("HTTP 503 (server error) ("));
  EXPECT_THAT(failing, HasSubstr("the retry budget of 1.0 s spent"));
  EXPECT_GE(Requests(server_, "/status/503", 5), 5u);
  start = std::chrono::steady_clock::now();
  const std::string throttled =
      MessageOf([&] { client.ReadAll(server_.Url("status/429"), 1 << 20); });
  EXPECT_GE(SecondsSince(start), 0.3);
  EXPECT_THAT(throttled, HasSubstr("HTTP 429 (too many requests) ("));
  EXPECT_GE(Requests(server_, "/status/429", 5), 5u);
}

TEST_F(HttpClientTest, TheRetryBudgetBoundsTheAttempts) {
  RemoteOptions options = Quick(1000);
  options.backoff_s = 0.05;
  options.retry_budget_s = 0.5;
  const HttpClient client(options);
  const auto start = std::chrono::steady_clock::now();
  const std::string message =
      MessageOf([&] { client.ReadAll(server_.Url("status/503"), 1 << 20); });
  EXPECT_THAT(message, HasSubstr("the retry budget of 0.5 s spent"));
  EXPECT_LT(Requests(server_, "/status/503", 2), 20u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// A transfer that goes on too slowly ends with the budget, not when it is
// done.
TEST_F(HttpClientTest, TheRetryBudgetBoundsASlowTransfer) {
  server_.Stop();
  server_.set_server_config("limit_rate 10k;");  // 100 KB: 10 s
  server_.Start();
  RemoteOptions options = Quick(3);
  options.retry_budget_s = 0.5;
  const HttpClient client(options);
  std::vector<uint8_t> got(bytes_.size());
  const auto start = std::chrono::steady_clock::now();
  const std::string message =
      MessageOf([&] { client.ReadRange(server_.Url("blob.bin"), 0, got.size(), got.data()); });
  EXPECT_THAT(message, HasSubstr("Timeout was reached (curl error 28"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(HttpClientTest, AServerThatIsGoneIsAnErrorAfterTheRetries) {
  const HttpClient client(Quick(3));
  std::vector<uint8_t> got(10);
  client.ReadRange(server_.Url("blob.bin"), 0, 10, got.data());
  server_.Stop();
  auto start = std::chrono::steady_clock::now();
  const std::string message = MessageOf([&] {
    client.ReadRange(server_.Url("blob.bin"), 0, 10, got.data());
  });
  EXPECT_GE(SecondsSince(start), 0.3);
  EXPECT_THAT(message, HasSubstr(server_.Url("blob.bin") + ": bytes 0-9: "));
  EXPECT_THAT(message, HasSubstr("Couldn't connect to server (curl error 7"));
  EXPECT_THAT(message, HasSubstr("the retry budget of 1.0 s spent"));
  // A request made while the outage is younger than the budget retries
  // for what is left of it only.
  start = std::chrono::steady_clock::now();
  const std::string during = MessageOf([&] {
    client.ReadRange(server_.Url("blob.bin"), 10, 10, got.data());
  });
  EXPECT_LT(SecondsSince(start), 0.9);
  EXPECT_THAT(during, HasSubstr("(the server failing for "));
  // Once the server has been gone for the whole budget, the next request
  // tries once and fails at once, saying for how long the server has failed.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  start = std::chrono::steady_clock::now();
  const std::string next = MessageOf([&] {
    client.ReadRange(server_.Url("blob.bin"), 10, 10, got.data());
  });
  EXPECT_LT(SecondsSince(start), 0.5);
  EXPECT_THAT(next, HasSubstr("(1 attempt, the retry budget of 1.0 s spent (the server failing for "));
  // Back on the same port: the client reconnects.
  server_.Start();
  client.ReadRange(server_.Url("blob.bin"), 10, 10, got.data());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes_.begin() + 10));
}

// Requests to a server that goes away share its outage: each of many
// threads' requests ends within one budget of its first failure, not one
// budget after another.
TEST_F(HttpClientTest, ManyRequestsToAServerThatIsGoneEndWithinOneBudget) {
  const HttpClient client(Quick(3));
  server_.Stop();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<uint8_t> got(10);
      for (int i = 0; i < 16; ++i) {
        try {
          client.ReadRange(server_.Url("blob.bin"), 0, 10, got.data());
        } catch (const Error&) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 64);
  // One budget (1 s) and the last waits, not 16 budgets a thread.
  EXPECT_LT(SecondsSince(start), 4.0);
}

// A server stopped for longer than the old fixed attempts lasted, and back
// within the budget: the request is whole.
TEST_F(HttpClientTest, AServerBackWithinTheBudgetLeavesTheRequestWhole) {
  RemoteOptions options;  // the defaults: a 60 s budget
  options.connect_timeout_s = 2;
  const HttpClient client(options);
  std::vector<uint8_t> got(10);
  server_.Stop();
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    server_.Start();
  });
  client.ReadRange(server_.Url("blob.bin"), 20, 10, got.data());
  restart.join();
  EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes_.begin() + 20));
}

TEST_F(HttpClientTest, RangesPastTheEndAndOversizedBodiesAreRefused) {
  const HttpClient client(Quick(5));
  std::vector<uint8_t> got(10);
  const std::string past = MessageOf([&] {
    client.ReadRange(server_.Url("blob.bin"), 200000, 10, got.data());
  });
  EXPECT_THAT(past, HasSubstr("HTTP 416 (range not satisfiable"));
  EXPECT_THAT(past, HasSubstr("(1 attempt in "));
  // A range that runs past the end comes back short: the retry asks for the
  // rest only, which the server refuses.
  const std::string short_body = MessageOf([&] {
    client.ReadRange(server_.Url("blob.bin"), 99995, 10, got.data());
  });
  EXPECT_THAT(short_body, HasSubstr("HTTP 416 (range not satisfiable"));
  EXPECT_THAT(short_body, HasSubstr("(2 attempts in "));
  const std::vector<std::string> log = server_.AccessLog(2);
  ASSERT_GE(log.size(), 2u);
  EXPECT_THAT(log[log.size() - 2], HasSubstr("206 bytes=99995-100004"));
  EXPECT_THAT(log[log.size() - 1], HasSubstr("416 bytes=100000-100004"));
  const std::string large =
      MessageOf([&] { client.ReadAll(server_.Url("blob.bin"), 1000); });
  EXPECT_THAT(large, HasSubstr("larger than the limit of 1000 bytes"));
}

TEST(HttpClient, OptionsOutOfRangeAreRefusedNamingTheField) {
  RemoteOptions options;
  options.max_attempts = 0;
  EXPECT_THAT(MessageOf([&] { HttpClient client(options); }),
              HasSubstr("max_attempts must be >= 1, got 0"));
  options = RemoteOptions{};
  options.stall_timeout_s = 0;
  EXPECT_THAT(MessageOf([&] { HttpClient client(options); }), HasSubstr("stall_timeout_s"));
  options = RemoteOptions{};
  options.backoff_s = -1;
  EXPECT_THAT(MessageOf([&] { HttpClient client(options); }), HasSubstr("backoff_s"));
}

TEST(HttpClient, AUrlOfAnotherSchemeIsRefusedAtOnce) {
  const HttpClient client(Quick(5));
  EXPECT_THAT(MessageOf([&] { client.ReadAll("ftp://127.0.0.1/x", 100); }),
              HasSubstr("(1 attempt in "));
}

}  // namespace
}  // namespace feedline::storage
