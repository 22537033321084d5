#include "src/storage/byte_source.h"

#include <algorithm>

#include "feedline/error.h"

namespace feedline::storage {

void ByteSource::Stream(uint64_t offset, uint64_t size, const Sink& sink) const {
  std::vector<uint8_t> piece(static_cast<size_t>(std::min<uint64_t>(size, kStreamPiece)));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kStreamPiece));
    ReadRange(offset + done, n, piece.data());
    sink(piece.data(), n);
    done += n;
  }
}

std::optional<std::vector<uint8_t>> ByteSource::ReadAll(uint64_t max_bytes,
                                                         std::string* missing) const {
  const std::optional<uint64_t> size = Size(missing);
  if (!size) return std::nullopt;
  if (*size > max_bytes) {
    throw Error(name() + ": " + std::to_string(*size) + " bytes, more than the " +
                std::to_string(max_bytes) + " read whole");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(*size));
  ReadRange(0, bytes.size(), bytes.data());
  return bytes;
}

bool ByteSource::Refetch(uint64_t offset, uint64_t size) const {
  (void)offset;
  (void)size;
  return false;
}

void ByteSource::ThrowMissing(const std::string& path, const std::string& message) const {
  (void)path;
  throw Error(message);
}

}  // namespace feedline::storage
