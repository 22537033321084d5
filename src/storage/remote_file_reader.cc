#include "feedline/storage/remote_file_reader.h"

#include <optional>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/storage/http_client.h"

namespace feedline::storage {

RemoteFileReader::RemoteFileReader(RemoteOptions options)
    : client_(std::make_unique<HttpClient>(std::move(options))) {}

RemoteFileReader::~RemoteFileReader() = default;

bool RemoteFileReader::IsUrl(std::string_view path) {
  return path.starts_with("http://") || path.starts_with("https://") ||
         path.starts_with("s3://");
}

uint64_t RemoteFileReader::Size(const std::string& url) const {
  const std::optional<uint64_t> size = client_->Size(url);
  if (!size) throw Error(url + ": no such file (the server answered 404)");
  return *size;
}

void RemoteFileReader::ReadRange(const std::string& url, uint64_t offset, size_t size,
                                 uint8_t* dst) const {
  if (size == 0) return;
  client_->ReadRange(url, offset, size, dst);
}

size_t RemoteFileReader::connections() const { return client_->handles_made(); }

}  // namespace feedline::storage
