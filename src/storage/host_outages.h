// HostOutages: since when each server has been failing, shared by every
// request of one HttpClient, so that a server that is gone ends every
// request within one retry budget counted from its first failure, whatever
// the number of requests (the samples of a batch, the threads reading it).
//
// A request retries a failing server for the budget (RemoteOptions::
// retry_budget_s): while the server has failed for less than that, every
// request to it keeps retrying until the budget, counted from the first
// failure, runs out; once it has failed for longer, a new request makes one
// attempt (the server may be back) and fails at once. An answer from the
// server, any answer a retry does not follow (2xx, 404, 403, ...), ends its
// outage.
//
// Thread safety: none; HttpClient guards its HostOutages with its own lock,
// which its fork handlers hold across fork.
#ifndef FEEDLINE_SRC_STORAGE_HOST_OUTAGES_H_
#define FEEDLINE_SRC_STORAGE_HOST_OUTAGES_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace feedline::storage {

class HostOutages {
 public:
  using Clock = std::chrono::steady_clock;

  // "scheme://authority" of `url` (the part before its path): the server a
  // request goes to. s3://BUCKET/KEY gives s3://BUCKET.
  static std::string HostOf(std::string_view url);

  // A request to `host` failed in a way that is retried, at `now`.
  void Failed(const std::string& host, Clock::time_point now);
  // `host` answered.
  void Answered(const std::string& host);
  // Since when `host` has been failing, if it is.
  std::optional<Clock::time_point> FailingSince(const std::string& host) const;

 private:
  std::unordered_map<std::string, Clock::time_point> since_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_HOST_OUTAGES_H_
