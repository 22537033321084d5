#include "feedline/storage/remote_options.h"

#include "feedline/error.h"

namespace feedline::storage {
namespace {
// Smaller parts would cost a request (a round trip) per few packets.
constexpr uint64_t kMinDownloadPartBytes = uint64_t{64} << 10;
}  // namespace

void CheckRemoteOptions(const RemoteOptions& options) {
  auto refuse = [](const std::string& field, const std::string& rule, double value) {
    throw Error("remote options: " + field + " must be " + rule + ", got " + std::to_string(value));
  };
  if (options.max_attempts < 1) refuse("max_attempts", ">= 1", options.max_attempts);
  if (!(options.retry_budget_s > 0)) refuse("retry_budget_s", "> 0", options.retry_budget_s);
  if (!(options.connect_timeout_s > 0)) {
    refuse("connect_timeout_s", "> 0", options.connect_timeout_s);
  }
  if (!(options.stall_timeout_s > 0)) refuse("stall_timeout_s", "> 0", options.stall_timeout_s);
  if (!(options.backoff_s >= 0)) refuse("backoff_s", ">= 0", options.backoff_s);
  if (options.prefetch_requests < 1) {
    refuse("prefetch_requests", ">= 1", options.prefetch_requests);
  }
  if (options.download_part_bytes < kMinDownloadPartBytes) {
    refuse("download_part_bytes", ">= 65536", static_cast<double>(options.download_part_bytes));
  }
  if (options.download_parts < 1) refuse("download_parts", ">= 1", options.download_parts);
}

bool IsRemoteLocation(const std::string& location) {
  return location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0 ||
         location.rfind("s3://", 0) == 0;
}

}  // namespace feedline::storage
