// HttpSource: a file that an HTTP(S) server or an S3 endpoint serves, as a
// ByteSource over the storage layer's HttpClient: a range is one ranged GET,
// a stream one GET of the range, a whole small file one GET, the size a
// HEAD; each retried and bounded as remote_options.h says. s3:// URLs are
// signed (SigV4) by the client, so this is the S3 source too.
//
// Thread safety: as ByteSource (the client keeps one connection per thread
// reading at once).
#ifndef FEEDLINE_SRC_STORAGE_HTTP_SOURCE_H_
#define FEEDLINE_SRC_STORAGE_HTTP_SOURCE_H_

#include <string>

#include "src/storage/byte_source.h"
#include "src/storage/http_client.h"

namespace feedline::storage {

class HttpSource : public ByteSource {
 public:
  // `client` outlives the source.
  HttpSource(const HttpClient* client, std::string url) : client_(client), url_(std::move(url)) {}

  const std::string& name() const override { return url_; }
  // 404 and 410 are missing ("HTTP 410 (gone)"); a HEAD.
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override;
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override;
  void Stream(uint64_t offset, uint64_t size, const Sink& sink) const override;
  // One GET, no HEAD before it.
  std::optional<std::vector<uint8_t>> ReadAll(uint64_t max_bytes,
                                              std::string* missing = nullptr) const override;

 private:
  const HttpClient* const client_;
  const std::string url_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_HTTP_SOURCE_H_
