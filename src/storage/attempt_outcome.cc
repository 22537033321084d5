#include "src/storage/attempt_outcome.h"

#include <curl/curl.h>

namespace feedline::storage {
namespace {

// libcurl's failures worth another attempt: the network or the server's
// connection, not the request.
bool RetryableCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

AttemptOutcome TransportFailure(int curl_code, const std::string& detail) {
  const auto code = static_cast<CURLcode>(curl_code);
  AttemptOutcome outcome;
  outcome.retry = RetryableCurlError(code);
  outcome.unreachable = outcome.retry;
  outcome.problem = std::string(curl_easy_strerror(code)) + " (curl error " +
                    std::to_string(curl_code) + (detail.empty() ? "" : ": ") + detail + ")";
  return outcome;
}

AttemptOutcome AnswerOutcome(long status, const std::string& error_body) {
  AttemptOutcome outcome;
  outcome.status = status;
  if (status >= 200 && status < 300) {
    outcome.done = true;
    return outcome;
  }
  outcome.problem = "HTTP " + std::to_string(status);
  const std::string s3_code = S3ErrorCode(error_body);
  if (!s3_code.empty()) outcome.problem += " " + s3_code;
  if (IsNotFound(status)) {
    outcome.done = true;
    outcome.problem += status == 410 ? " (gone)" : " (not found)";
  } else if (status == 401 || status == 403) {
    outcome.problem += " (access refused: check the credentials and permissions)";
  } else if (status == 416) {
    outcome.problem += " (range not satisfiable: the file is shorter than its index says)";
  } else if (status == 408 || status == 429 || status >= 500) {
    outcome.retry = true;
    outcome.problem += status == 429 ? " (too many requests)" : " (server error)";
  }
  return outcome;
}

bool IsNotFound(long status) { return status == 404 || status == 410; }

std::string S3ErrorCode(const std::string& body) {
  const size_t begin = body.find("<Code>");
  const size_t end = body.find("</Code>");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
  return body.substr(begin + 6, end - begin - 6);
}

}  // namespace feedline::storage
