#include "src/storage/http_source.h"

namespace feedline::storage {

std::optional<uint64_t> HttpSource::Size(std::string* missing) const {
  long status = 0;
  std::optional<uint64_t> size = client_->Size(url_, &status);
  if (!size && missing != nullptr) *missing = HttpClient::NotFoundText(status);
  return size;
}

void HttpSource::ReadRange(uint64_t offset, size_t size, uint8_t* dst) const {
  if (size == 0) return;
  client_->ReadRange(url_, offset, size, dst);
}

void HttpSource::Stream(uint64_t offset, uint64_t size, const Sink& sink) const {
  if (size == 0) return;
  client_->StreamRange(url_, offset, size, sink);
}

std::optional<std::vector<uint8_t>> HttpSource::ReadAll(uint64_t max_bytes,
                                                        std::string* missing) const {
  long status = 0;
  std::optional<std::vector<uint8_t>> bytes = client_->ReadAll(url_, max_bytes, &status);
  if (!bytes && missing != nullptr) *missing = HttpClient::NotFoundText(status);
  return bytes;
}

}  // namespace feedline::storage
