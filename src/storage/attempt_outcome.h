// AttemptOutcome: how one attempt of an HTTP request ended and what
// HttpClient does next (return, retry, or fail naming the problem). The
// rules live here, apart from libcurl's set-up and the retry loop, so that
// each one is a line of a test that needs no server:
//
//   - a transfer libcurl could not finish is retried when the network or
//     the server's connection failed (refused, reset, timed out, resolver),
//     and counts then as the server being unreachable (host_outages.h);
//     anything else (a TLS verification failure, a malformed URL) is final;
//   - 2xx is the answer; 404 and 410 are answers the caller handles (a
//     missing file is not retried); 408, 429 and 5xx are retried; other
//     statuses (401, 403, 416, ...) are final, with a reason a user can act on;
//   - an S3 error's <Code> (e.g. SignatureDoesNotMatch) joins the status.
#ifndef FEEDLINE_SRC_STORAGE_ATTEMPT_OUTCOME_H_
#define FEEDLINE_SRC_STORAGE_ATTEMPT_OUTCOME_H_

#include <string>

namespace feedline::storage {

struct AttemptOutcome {
  bool done = false;  // `status` is the answer (2xx, or a 404/410 the caller handles)
  bool retry = false;
  // The server could not be reached, or went away mid-transfer (a retried
  // transport failure, not an HTTP answer): its outage is shared by every
  // request to it (host_outages.h).
  bool unreachable = false;
  long status = 0;
  std::string problem;  // when not done: what went wrong, for the message
};

// A transfer that libcurl ended with `curl_code` (a CURLcode other than
// CURLE_OK); `detail` is its error buffer ("" when empty).
AttemptOutcome TransportFailure(int curl_code, const std::string& detail);

// An HTTP answer with `status`; `error_body` is the start of a non-2xx
// answer's body.
AttemptOutcome AnswerOutcome(long status, const std::string& error_body);

// 404 or 410: the file is not there.
bool IsNotFound(long status);

// The <Code> of an S3 error answer ("SignatureDoesNotMatch"), or "".
std::string S3ErrorCode(const std::string& body);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_ATTEMPT_OUTCOME_H_
