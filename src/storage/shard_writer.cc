#include "src/storage/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"
#include "src/storage/tar_header.h"

namespace feedline::storage {
namespace {

uint64_t Padding(uint64_t size) { return (kTarBlock - size % kTarBlock) % kTarBlock; }

void WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      throw OsError(error, path, path + ": cannot write: " + std::strerror(error));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void SyncDirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself has happened
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    throw OsError(error, temporary, temporary + ": cannot create: " + std::strerror(error));
  }
  try {
    WriteAll(fd, bytes.data(), bytes.size(), temporary);
    if (::fsync(fd) != 0) {
      const int error = errno;
      throw OsError(error, temporary, temporary + ": cannot sync: " + std::strerror(error));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    throw OsError(error, path,
                  path + ": cannot rename " + temporary + ": " + std::strerror(error));
  }
  SyncDirectoryOf(path);
}

ShardWriter::ShardWriter(std::string tar_path, std::string index_path, uint64_t first_record)
    : tar_path_(std::move(tar_path)), index_path_(std::move(index_path)) {
  index_.first_record = first_record;
  fd_ = ::open(tar_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int error = errno;
    throw OsError(error, tar_path_, tar_path_ + ": cannot create: " + std::strerror(error));
  }
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t ShardWriter::RecordBytes(uint64_t size, uint64_t annotation_size) {
  // image header + data + padding, [annotations header + data + padding],
  // label header + one block of text.
  const uint64_t annotations =
      annotation_size == 0 ? 0 : kTarBlock + annotation_size + Padding(annotation_size);
  return kTarBlock + size + Padding(size) + annotations + 2 * kTarBlock;
}

void ShardWriter::Write(const void* data, size_t size) {
  WriteAll(fd_, data, size, tar_path_);
  written_ += size;
}

void ShardWriter::Add(const std::string& key, std::span<const uint8_t> image,
                      vision::ImageFormat format, int64_t label,
                      std::vector<uint32_t> jpeg_restarts,
                      const RecordAnnotations& annotations) {
  if (!IsValidShardKey(key)) throw Error("shard key '" + key + "' is not valid");
  static constexpr uint8_t kZeros[kTarBlock] = {};
  const TarHeader image_header = MakeTarHeader(key + ShardExtension(format), image.size());
  Write(image_header.data(), image_header.size());
  ShardRecord record;
  record.offset = written_;
  record.size = image.size();
  record.label = label;
  record.format = format;
  record.key = key;
  record.crc32c = Crc32c(image.data(), image.size());
  record.jpeg_restarts = std::move(jpeg_restarts);
  Write(image.data(), image.size());
  Write(kZeros, Padding(image.size()));
  const std::span<const uint8_t> det = annotations.bytes;
  if (!det.empty()) {
    if (det.size() > kMaxAnnotationBytes) {
      throw Error(tar_path_ + ": record " + key + ": annotations of " +
                  std::to_string(det.size()) + " bytes, over the limit of " +
                  std::to_string(kMaxAnnotationBytes));
    }
    const TarHeader header = MakeTarHeader(key + ".det", det.size());
    Write(header.data(), header.size());
    record.annotation_size = static_cast<uint32_t>(det.size());
    record.annotation_crc32c = Crc32c(det.data(), det.size());
    record.has_usable_box = annotations.has_usable_box;
    record.image_height = annotations.image_height;
    record.image_width = annotations.image_width;
    Write(det.data(), det.size());
    Write(kZeros, Padding(det.size()));
    index_.version = kShardIndexVersionAnnotated;
  }

  const std::string text = std::to_string(label);
  const TarHeader label_header = MakeTarHeader(key + ".cls", text.size());
  Write(label_header.data(), label_header.size());
  uint8_t block[kTarBlock] = {};
  std::memcpy(block, text.data(), text.size());
  Write(block, kTarBlock);
  index_.records.push_back(std::move(record));
}

uint64_t ShardWriter::Finish() {
  static constexpr uint8_t kEnd[2 * kTarBlock] = {};
  Write(kEnd, sizeof(kEnd));
  if (::fsync(fd_) != 0) {
    const int error = errno;
    throw OsError(error, tar_path_, tar_path_ + ": cannot sync: " + std::strerror(error));
  }
  ::close(fd_);
  fd_ = -1;
  index_.tar_size = written_;
  WriteFileAtomically(index_path_, SerializeShardIndex(index_));
  return written_;
}

}  // namespace feedline::storage
