// Uploading a local file to S3 (s3://BUCKET/KEY, the endpoint and
// credentials of the AWS configuration, HttpClient): one PUT for a file of
// at most `part_bytes`, else a multipart upload (CreateMultipartUpload, one
// UploadPart per `part_bytes` of the file, the last one shorter,
// CompleteMultipartUpload), so that a shard of any size goes up with one
// part in memory at a time, and a failed part is retried alone rather than
// the whole file. Each request is retried as HttpClient retries a GET (5xx,
// 429, resets, timeouts; 403 and 404 at once). A multipart upload that fails
// is aborted (AbortMultipartUpload), so that the store keeps no hidden
// parts; those a killed process leaves are aborted by AbortS3Uploads (a
// pack into S3 calls it when it starts).
//
// Nothing is visible at the key until the upload is whole: S3 makes a PUT
// or a completed multipart upload appear at once, never in part.
//
// Thread safety: reentrant (HttpClient may be shared).
#ifndef FEEDLINE_SRC_STORAGE_S3_UPLOAD_H_
#define FEEDLINE_SRC_STORAGE_S3_UPLOAD_H_

#include <cstdint>
#include <string>

#include "src/storage/http_client.h"

namespace feedline::storage {

// S3's smallest part but the last (5 MiB) and the part size the pack uses:
// a 256 MiB shard is 32 parts, each retried alone.
inline constexpr uint64_t kS3MinPartBytes = uint64_t{5} << 20;
inline constexpr uint64_t kS3PartBytes = uint64_t{8} << 20;

// Uploads the file at `path` to `url` (s3://BUCKET/KEY), replacing what is
// there. Throws Error naming the file (cannot be read) or the URL and the
// request that failed (its HTTP status or libcurl's error, the attempts);
// Error naming part_bytes if it is under kS3MinPartBytes.
void UploadFileToS3(const HttpClient& client, const std::string& path, const std::string& url,
                    uint64_t part_bytes = kS3PartBytes);

// Uploads `text` to `url` with one PUT.
void UploadTextToS3(const HttpClient& client, const std::string& text, const std::string& url);

// Deletes the object at `url` (no error if there is none).
void DeleteFromS3(const HttpClient& client, const std::string& url);

// Aborts every multipart upload under way of a key directly in the folder
// `prefix_url` (s3://BUCKET/PREFIX/: PREFIX/NAME, not PREFIX/SUB/NAME), e.g.
// those a killed pack left behind
// (ListMultipartUploads, then AbortMultipartUpload each). Returns how many.
// Throws Error naming the request that failed.
int64_t AbortS3Uploads(const HttpClient& client, const std::string& prefix_url);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_S3_UPLOAD_H_
