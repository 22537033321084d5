// RemoteFileReader: files that an HTTP(S) server or an S3 endpoint serves
// ("https://host/corpus/part-0.parquet", "s3://bucket/corpus/part-0.parquet"),
// read by byte ranges through the storage layer's HttpSource (its byte
// source of served files, over its HTTP client): the same
// retries, timeouts, connection reuse, HTTPS verification and S3 signing as
// a remote ShardDataset (remote_options.h). Nothing is kept: for whole
// files in the node's cache, fetched ahead, see remote_file_cache.h. For
// readers of other formats that read a file by ranges, as a Parquet reader
// reads a footer and then the column chunks of a row group.
//
// A glob of s3:// URLs ("s3://bucket/corpus/*.parquet") is listed (Glob).
//
// Thread safety: every method may be called from many threads at once (one
// connection per thread reading at the same time).
#ifndef FEEDLINE_STORAGE_REMOTE_FILE_READER_H_
#define FEEDLINE_STORAGE_REMOTE_FILE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/storage/remote_options.h"

namespace feedline::storage {

class HttpClient;

class FEEDLINE_EXPORT RemoteFileReader {
 public:
  // Throws Error if `options` are out of range.
  explicit RemoteFileReader(RemoteOptions options = {});
  ~RemoteFileReader();
  RemoteFileReader(const RemoteFileReader&) = delete;
  RemoteFileReader& operator=(const RemoteFileReader&) = delete;

  // Whether `path` is a URL this reader reads (http://, https://, s3://).
  static bool IsUrl(std::string_view path);

  // The length of `url` in bytes. Throws Error naming it when the server
  // has no such file or the request fails.
  uint64_t Size(const std::string& url) const;
  // Bytes [offset, offset + size) of `url` into `dst` (one ranged GET,
  // retried). Throws Error naming the URL and the range. size 0: nothing.
  void ReadRange(const std::string& url, uint64_t offset, size_t size, uint8_t* dst) const;

  // Whether `path` has glob characters (*, ? or [).
  static bool HasGlob(std::string_view path);
  // The files that `pattern` names, sorted: an s3:// URL whose last part
  // has glob characters (as fnmatch(3) reads them: *, ?, [...]), matched
  // against the objects directly in its folder (ListObjectsV2). Throws
  // Error naming the pattern for an http(s) one (a web server lists no
  // folder), for glob characters before its last '/', or for a failed
  // listing (the status, S3's code).
  std::vector<std::string> Glob(const std::string& pattern) const;

  // Connections made so far (one per thread that read at the same time).
  size_t connections() const;

 private:
  std::unique_ptr<HttpClient> client_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_REMOTE_FILE_READER_H_
