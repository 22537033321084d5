#include "src/storage/attempt_outcome.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <string>

namespace feedline::storage {
namespace {

TEST(AttemptOutcome, ATwoHundredIsTheAnswer) {
  for (const long status : {200L, 204L, 206L}) {
    const AttemptOutcome outcome = AnswerOutcome(status, "");
    EXPECT_TRUE(outcome.done) << status;
    EXPECT_FALSE(outcome.retry) << status;
    EXPECT_EQ(outcome.status, status);
  }
}

TEST(AttemptOutcome, AMissingFileIsAnAnswerTheCallerHandlesAndEachSaysWhich) {
  const AttemptOutcome missing = AnswerOutcome(404, "");
  EXPECT_TRUE(missing.done);
  EXPECT_FALSE(missing.retry);
  EXPECT_EQ(missing.problem, "HTTP 404 (not found)");
  const AttemptOutcome gone = AnswerOutcome(410, "");
  EXPECT_TRUE(gone.done);
  EXPECT_EQ(gone.problem, "HTTP 410 (gone)");
  EXPECT_TRUE(IsNotFound(404));
  EXPECT_TRUE(IsNotFound(410));
  EXPECT_FALSE(IsNotFound(403));
}

TEST(AttemptOutcome, ServerErrorsAndThrottlingAreRetriedButNotAsAnOutage) {
  for (const long status : {408L, 429L, 500L, 502L, 503L, 504L}) {
    const AttemptOutcome outcome = AnswerOutcome(status, "");
    EXPECT_FALSE(outcome.done) << status;
    EXPECT_TRUE(outcome.retry) << status;
    // The server answered: it is there.
    EXPECT_FALSE(outcome.unreachable) << status;
  }
  EXPECT_EQ(AnswerOutcome(429, "").problem, "HTTP 429 (too many requests)");
  EXPECT_EQ(AnswerOutcome(503, "").problem, "HTTP 503 (server error)");
}

TEST(AttemptOutcome, RefusalsAreFinalWithAReasonToActOn) {
  for (const long status : {401L, 403L}) {
    const AttemptOutcome outcome = AnswerOutcome(status, "");
    EXPECT_FALSE(outcome.done);
    EXPECT_FALSE(outcome.retry);
    EXPECT_NE(outcome.problem.find("access refused: check the credentials"), std::string::npos);
  }
  const AttemptOutcome range = AnswerOutcome(416, "");
  EXPECT_FALSE(range.retry);
  EXPECT_NE(range.problem.find("shorter than its index says"), std::string::npos);
  const AttemptOutcome teapot = AnswerOutcome(418, "");
  EXPECT_FALSE(teapot.done);
  EXPECT_FALSE(teapot.retry);
  EXPECT_EQ(teapot.problem, "HTTP 418");
}

TEST(AttemptOutcome, AnS3ErrorCodeJoinsTheStatus) {
  const std::string body =
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message>"
      "</Error>";
  EXPECT_EQ(S3ErrorCode(body), "SignatureDoesNotMatch");
  EXPECT_EQ(AnswerOutcome(403, body).problem,
            "HTTP 403 SignatureDoesNotMatch (access refused: check the credentials and "
            "permissions)");
  EXPECT_EQ(AnswerOutcome(404, "<Error><Code>NoSuchKey</Code></Error>").problem,
            "HTTP 404 NoSuchKey (not found)");
  EXPECT_EQ(S3ErrorCode("<html>not found</html>"), "");
  EXPECT_EQ(S3ErrorCode("</Code><Code>"), "");
}

TEST(AttemptOutcome, ANetworkFailureIsRetriedAsTheServerUnreachable) {
  for (const CURLcode code : {CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST,
                              CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
                              CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE}) {
    const AttemptOutcome outcome = TransportFailure(code, "");
    EXPECT_TRUE(outcome.retry) << code;
    EXPECT_TRUE(outcome.unreachable) << code;
    EXPECT_FALSE(outcome.done) << code;
  }
  const AttemptOutcome refused = TransportFailure(CURLE_COULDNT_CONNECT, "Connection refused");
  EXPECT_EQ(refused.problem, std::string(curl_easy_strerror(CURLE_COULDNT_CONNECT)) +
                                 " (curl error 7: Connection refused)");
}

TEST(AttemptOutcome, AFailureOfTheRequestItselfIsFinal) {
  // A certificate that does not verify, a URL libcurl cannot use: another
  // attempt would fail the same way.
  for (const CURLcode code :
       {CURLE_PEER_FAILED_VERIFICATION, CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL}) {
    const AttemptOutcome outcome = TransportFailure(code, "");
    EXPECT_FALSE(outcome.retry) << code;
    EXPECT_FALSE(outcome.unreachable) << code;
    EXPECT_FALSE(outcome.done) << code;
    EXPECT_NE(outcome.problem.find("(curl error " + std::to_string(code) + ")"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace feedline::storage
