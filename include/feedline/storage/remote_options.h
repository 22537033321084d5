// RemoteOptions: how a dataset reads a pack that an HTTP(S) server serves
// (ShardDataset over "http://host/path/"): the retries and timeouts of each
// request, so that a failing or silent server ends in an error, never a hang,
// and the node's shard cache (docs/storage.md, "One cache per node").
//
// What is retried (with exponential backoff and jitter, for as long as
// `retry_budget_s` allows): a connection refused, reset or timed out, a
// stalled or short body, HTTP 5xx, 408 and 429. What fails at once: 404 /
// 410 (no such file), 401 / 403 (access refused) and every other 4xx. A
// server that is gone fails every request to it within one budget of its
// first failure, however many requests there are: the requests of one
// dataset share since when each server has been failing.
// The error names the URL, the byte range, the HTTP status or libcurl's
// error, and the attempts made.
//
// Thread safety: a value type.
//
// Example:
//   RemoteOptions remote;
//   remote.retry_budget_s = 30;
//   ShardDataset train(ShardDataset::Find("http://10.0.0.5/train/", remote),
//                      TrainPipeline(224), {}, 0, remote);
#ifndef FEEDLINE_STORAGE_REMOTE_OPTIONS_H_
#define FEEDLINE_STORAGE_REMOTE_OPTIONS_H_

#include <string>

#include "feedline/export.h"

namespace feedline::storage {

struct FEEDLINE_EXPORT RemoteOptions {
  // The fewest attempts a request makes within its retry budget, the first
  // one included, unless its server has been failing for longer than the
  // budget (then a request makes one attempt, and fails at once if the
  // server is still gone). Retries go on past it for as long as the budget
  // allows. >= 1.
  int max_attempts = 5;
  // How long a failing request is retried, in seconds, counted from its
  // start, or from its server's first failure if that was earlier (a server
  // stopped and started again within it leaves every request whole); no
  // attempt starts, and none goes on, past it. > 0. A whole shard downloaded
  // into the cache (cache_dir), or an upload (a pack into S3), may take
  // longer while bytes keep flowing: its attempts are bounded by
  // stall_timeout_s; no retry starts past the budget.
  double retry_budget_s = 60;
  // The most time a connection may take to open, in seconds. > 0.
  double connect_timeout_s = 10;
  // A transfer that receives nothing for this long is abandoned (and
  // retried), in seconds. > 0.
  double stall_timeout_s = 15;
  // The wait before the first retry, in seconds; doubled for each further
  // one up to 2 s (so that a server that is back is used again within about
  // that), each wait drawn between half and one and a half of it. >= 0.
  double backoff_s = 0.1;

  // A local folder that keeps whole shards, shared by every process and
  // thread on the node that names it (file locks): each shard is downloaded
  // once per node, written under a temporary name, checked against its
  // index's CRC-32C and only then renamed into place, so that a download
  // killed midway is never taken as a whole shard (the next one resumes
  // it). Created if missing. Empty: no cache; each record is a ranged GET.
  std::string cache_dir;
  // The most bytes of whole shards kept in cache_dir (the least recently
  // opened are deleted first to make room), besides the shards being
  // downloaded. 0: no limit.
  uint64_t cache_limit = 0;

  // Fetching ahead, with cache_dir set and the dataset read by a DataLoader
  // (which tells it the epoch's order, Dataset::EpochOrder): whole shards
  // are downloaded into the cache in the order the epoch first needs them,
  // before its reads ask for them. At most `prefetch_bytes` of shards
  // fetched ahead that the delivered batches have not yet passed (the
  // smaller of it and cache_limit, when that is set; one shard at a time if
  // a shard is larger); 0: no fetching ahead, a shard is downloaded by its
  // first read.
  uint64_t prefetch_bytes = uint64_t{2} << 30;
  // The most shard downloads fetching ahead runs at once. >= 1.
  int prefetch_requests = 4;
  // A shard downloaded into the cache is requested in parts of
  // `download_part_bytes` (ranged GETs; the last part may be shorter), up to
  // `download_parts` of them at once: over a long or lossy path one
  // connection's rate is bounded by its window and its losses, and several
  // connections share the path. A killed download resumes each part where it
  // stopped. So fetching ahead runs at most prefetch_requests x
  // download_parts requests at once. download_part_bytes >= 64 KiB;
  // download_parts >= 1 (1: one request a shard, from its first byte).
  uint64_t download_part_bytes = uint64_t{4} << 20;
  int download_parts = 4;

  // HTTPS: a file of PEM certificates of the authorities to trust instead
  // of the system's (a private CA, a self-signed server). Empty: the
  // environment's SSL_CERT_FILE if set, else the system's store.
  std::string ca_file;
};

// Throws Error naming the first field out of range and its value.
FEEDLINE_EXPORT void CheckRemoteOptions(const RemoteOptions& options);

// True if `location` is a URL that a remote pack store reads (http://,
// https://, s3://) rather than a local path.
FEEDLINE_EXPORT bool IsRemoteLocation(const std::string& location);

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_REMOTE_OPTIONS_H_
