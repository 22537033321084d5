#include "feedline/storage/shard_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"

namespace feedline::storage {
namespace {

constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
// Past any image a decoder takes (JPEG's limit is 65,535 a side).
constexpr uint32_t kMaxImageSide = 1u << 20;

void Put(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t Get(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{p[i]} << (8 * i);
  return value;
}

uint64_t RoundUpToBlock(uint64_t n) { return (n + kTarBlock - 1) / kTarBlock * kTarBlock; }

uint8_t FormatCode(vision::ImageFormat format) {
  switch (format) {
    case vision::ImageFormat::kJpeg:
      return 1;
    case vision::ImageFormat::kPng:
      return 2;
    case vision::ImageFormat::kWebp:
      return 3;
    default:
      return 0;
  }
}

// The checks shared by writing and reading; `what` prefixes the message.
void CheckRecords(const ShardIndex& index, const std::string& name) {
  // A record's member needs its header block before it; the next member
  // (the .cls label, then the next image) starts after its padded data.
  uint64_t next_free = kTarBlock;
  for (size_t i = 0; i < index.records.size(); ++i) {
    const ShardRecord& r = index.records[i];
    const std::string where = name + ": record " + std::to_string(i) + ": ";
    if (!IsValidShardKey(r.key))
      throw Error(where + "bad key (expected 1 to 64 of A-Z a-z 0-9 _ -)");
    if (FormatCode(r.format) == 0) throw Error(where + "unknown image format");
    if (r.label < 0) throw Error(where + "negative label " + std::to_string(r.label));
    if (r.offset % kTarBlock != 0) {
      throw Error(where + "offset " + std::to_string(r.offset) + " is not a multiple of 512");
    }
    if (r.offset < next_free) {
      throw Error(where + "offset " + std::to_string(r.offset) +
                  " overlaps the previous record or its tar header");
    }
    if (r.size > index.tar_size || r.offset > index.tar_size - r.size) {
      throw Error(where + "offset " + std::to_string(r.offset) + " + size " +
                  std::to_string(r.size) + " is past the tar's end (" +
                  std::to_string(index.tar_size) + " bytes)");
    }
    next_free = RoundUpToBlock(r.offset + r.size) + kTarBlock;
    if ((r.image_height > 0 || r.image_width > 0) && index.version < 4) {
      throw Error(where + "an image size needs index version 4");
    }
    if (r.image_height > kMaxImageSide || r.image_width > kMaxImageSide) {
      throw Error(where + "image size " + std::to_string(r.image_height) + "x" +
                  std::to_string(r.image_width) + " is over " + std::to_string(kMaxImageSide) +
                  " pixels a side");
    }
    if (r.annotation_size > 0 || r.has_usable_box) {
      if (index.version < 3) throw Error(where + "annotations need index version 3");
      if (r.annotation_size > kMaxAnnotationBytes) {
        throw Error(where + "annotations of " + std::to_string(r.annotation_size) +
                    " bytes, over the limit of " + std::to_string(kMaxAnnotationBytes));
      }
      if (r.annotation_size == 0) throw Error(where + "a usable box without annotations");
      const uint64_t at = AnnotationOffset(r);
      if (at > index.tar_size || r.annotation_size > index.tar_size - at) {
        throw Error(where + "annotations at " + std::to_string(at) + " + size " +
                    std::to_string(r.annotation_size) + " are past the tar's end (" +
                    std::to_string(index.tar_size) + " bytes)");
      }
      next_free = RoundUpToBlock(at + r.annotation_size) + kTarBlock;
    }
    if (!r.jpeg_restarts.empty()) {
      if (index.version < 2) throw Error(where + "restart offsets need index version 2");
      if (r.format != vision::ImageFormat::kJpeg) {
        throw Error(where + "restart offsets for an image that is no JPEG");
      }
      if (r.jpeg_restarts.size() > kMaxJpegRestarts) {
        throw Error(where + "more than " + std::to_string(kMaxJpegRestarts) +
                    " restart offsets");
      }
      // A JPEG's entropy data starts after SOI, a frame and a scan header.
      uint64_t previous = 0;
      for (uint32_t at : r.jpeg_restarts) {
        if (at <= previous || at >= r.size) {
          throw Error(where + "restart offset " + std::to_string(at) +
                      " is not increasing or outside the image's " + std::to_string(r.size) +
                      " bytes");
        }
        previous = at;
      }
    }
  }
}

size_t HeaderBytes(uint32_t version) {
  return version == 1 ? kShardIndexHeaderBytesV1 : kShardIndexHeaderBytes;
}

size_t RecordBytes(uint64_t version) {
  return version >= 4   ? kShardIndexRecordBytesV4
         : version == 3 ? kShardIndexRecordBytesV3
                        : kShardIndexRecordBytes;
}

}  // namespace

uint64_t AnnotationOffset(const ShardRecord& r) {
  return RoundUpToBlock(r.offset + r.size) + kTarBlock;
}

const char* ShardExtension(vision::ImageFormat format) {
  switch (format) {
    case vision::ImageFormat::kPng:
      return ".png";
    case vision::ImageFormat::kWebp:
      return ".webp";
    default:
      return ".jpg";
  }
}

bool IsValidShardKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxShardKeyBytes) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<uint8_t> SerializeShardIndex(const ShardIndex& index) {
  if (index.version < 1 || index.version > kShardIndexVersionAnnotated) {
    throw Error("shard index: version " + std::to_string(index.version) + " (1 to 4)");
  }
  const size_t record_bytes = RecordBytes(index.version);
  CheckRecords(index, "shard index");
  uint64_t key_bytes = 0;
  uint64_t restarts = 0;
  for (const ShardRecord& r : index.records) {
    key_bytes += r.key.size();
    restarts += r.jpeg_restarts.size();
  }
  if (key_bytes > UINT32_MAX) throw Error("shard index: keys over 4 GiB");
  std::vector<uint8_t> out;
  out.reserve(HeaderBytes(index.version) + index.records.size() * record_bytes +
              key_bytes + 4 * restarts + 4);
  out.resize(sizeof(kShardIndexMagic));
  std::memcpy(out.data(), kShardIndexMagic, sizeof(kShardIndexMagic));
  Put(out, index.version, 4);
  Put(out, record_bytes, 4);
  Put(out, index.records.size(), 8);
  Put(out, index.first_record, 8);
  Put(out, index.tar_size, 8);
  Put(out, key_bytes, 8);
  if (index.version >= 2) Put(out, restarts, 8);
  uint64_t key_offset = 0;
  for (const ShardRecord& r : index.records) {
    Put(out, r.offset, 8);
    Put(out, r.size, 8);
    Put(out, static_cast<uint64_t>(r.label), 8);
    Put(out, key_offset, 4);
    Put(out, r.key.size(), 2);
    Put(out, FormatCode(r.format), 1);
    Put(out, r.has_usable_box ? 1 : 0, 1);
    Put(out, r.crc32c, 4);
    Put(out, r.jpeg_restarts.size(), 4);
    if (index.version >= 3) {
      Put(out, r.annotation_size, 4);
      Put(out, r.annotation_crc32c, 4);
    }
    if (index.version >= 4) {
      Put(out, r.image_height, 4);
      Put(out, r.image_width, 4);
    }
    key_offset += r.key.size();
  }
  for (const ShardRecord& r : index.records) out.insert(out.end(), r.key.begin(), r.key.end());
  for (const ShardRecord& r : index.records) {
    for (uint32_t at : r.jpeg_restarts) Put(out, at, 4);
  }
  Put(out, Crc32c(out.data(), out.size()), 4);
  return out;
}

ShardIndex ParseShardIndex(std::span<const uint8_t> bytes, const std::string& name) {
  const std::string prefix = name + ": ";
  if (bytes.size() < kShardIndexHeaderBytesV1 + 4) {
    throw Error(prefix + "truncated index: " + std::to_string(bytes.size()) +
                " bytes, shorter than its header");
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kShardIndexMagic, 8) != 0) {
    throw Error(prefix + "not a feedline shard index (bad magic)");
  }
  const uint64_t version = Get(p + 8, 4);
  if (version < 1 || version > kShardIndexVersionAnnotated) {
    throw Error(prefix + "index version " + std::to_string(version) +
                ", this feedline reads versions 1 to 4");
  }
  const size_t record_bytes = RecordBytes(version);
  const size_t header_bytes = HeaderBytes(static_cast<uint32_t>(version));
  if (bytes.size() < header_bytes + 4) {
    throw Error(prefix + "truncated index: " + std::to_string(bytes.size()) +
                " bytes, shorter than its header");
  }
  if (Get(p + 12, 4) != record_bytes) throw Error(prefix + "bad record size in header");
  const uint64_t count = Get(p + 16, 8);
  ShardIndex index;
  index.version = static_cast<uint32_t>(version);
  index.first_record = Get(p + 24, 8);
  index.tar_size = Get(p + 32, 8);
  const uint64_t key_bytes = Get(p + 40, 8);
  const uint64_t restarts = version >= 2 ? Get(p + 48, 8) : 0;
  // Sizes compared without overflow: each term is bounded by the file first.
  const uint64_t body = bytes.size() - header_bytes - 4;
  if (count > body / record_bytes || key_bytes > body || restarts > body / 4 ||
      count * record_bytes + key_bytes + 4 * restarts != body) {
    throw Error(prefix + "truncated or damaged index: the header announces " +
                std::to_string(count) + " records, " + std::to_string(key_bytes) +
                " key bytes and " + std::to_string(restarts) + " restart offsets, the file holds " +
                std::to_string(bytes.size()) + " bytes");
  }
  const size_t crc_at = bytes.size() - 4;
  const uint32_t stored = static_cast<uint32_t>(Get(p + crc_at, 4));
  const uint32_t actual = Crc32c(p, crc_at);
  if (stored != actual) {
    throw Error(prefix + "index checksum mismatch (damaged index): stored " +
                std::to_string(stored) + ", computed " + std::to_string(actual));
  }
  const uint8_t* records = p + header_bytes;
  const char* keys = reinterpret_cast<const char*>(records + count * record_bytes);
  const uint8_t* restart_table = records + count * record_bytes + key_bytes;
  index.records.resize(count);
  uint64_t next_key = 0;
  uint64_t next_restart = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* r = records + i * record_bytes;
    ShardRecord& record = index.records[i];
    record.offset = Get(r, 8);
    record.size = Get(r + 8, 8);
    record.label = static_cast<int64_t>(Get(r + 16, 8));
    const uint64_t key_offset = Get(r + 24, 4);
    const uint64_t key_size = Get(r + 28, 2);
    const uint8_t format = r[30];
    record.crc32c = static_cast<uint32_t>(Get(r + 32, 4));
    const std::string where = prefix + "record " + std::to_string(i) + ": ";
    const uint64_t restart_count = Get(r + 36, 4);
    const uint8_t flags = r[31];
    if ((version < 3 && flags != 0) || flags > 1 || (version == 1 && restart_count != 0)) {
      throw Error(where + "reserved bytes are not zero");
    }
    record.has_usable_box = flags == 1;
    if (version >= 3) {
      record.annotation_size = static_cast<uint32_t>(Get(r + 40, 4));
      record.annotation_crc32c = static_cast<uint32_t>(Get(r + 44, 4));
    }
    if (version >= 4) {
      record.image_height = static_cast<uint32_t>(Get(r + 48, 4));
      record.image_width = static_cast<uint32_t>(Get(r + 52, 4));
    }
    if (restart_count > restarts - next_restart) {
      throw Error(where + "restart offsets past the index's restart table");
    }
    record.jpeg_restarts.resize(restart_count);
    for (uint64_t k = 0; k < restart_count; ++k) {
      record.jpeg_restarts[k] = static_cast<uint32_t>(Get(restart_table + 4 * (next_restart + k), 4));
    }
    next_restart += restart_count;
    if (format < 1 || format > 3)
      throw Error(where + "unknown image format " + std::to_string(format));
    record.format = format == 1   ? vision::ImageFormat::kJpeg
                    : format == 2 ? vision::ImageFormat::kPng
                                  : vision::ImageFormat::kWebp;
    // Keys lie back to back in record order: one layout per index.
    if (key_offset != next_key || key_size > key_bytes - key_offset) {
      throw Error(where + "key outside its place in the index's key bytes");
    }
    record.key.assign(keys + key_offset, key_size);
    next_key += key_size;
  }
  if (next_key != key_bytes) throw Error(prefix + "key bytes not used by any record");
  if (next_restart != restarts) throw Error(prefix + "restart offsets not used by any record");
  CheckRecords(index, name);
  return index;
}

ShardIndex ReadShardIndex(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    throw OsError(error, path, path + ": cannot open shard index: " + std::strerror(error));
  }
  struct stat st;
  std::vector<uint8_t> bytes;
  std::string failure;
  if (::fstat(fd, &st) != 0) {
    failure = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    failure = "not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > kMaxIndexBytes) {
    failure = "index of " + std::to_string(st.st_size) + " bytes is over the 1 GiB limit";
  } else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        failure = std::string("cannot read: ") + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!failure.empty()) throw Error(path + ": " + failure);
  return ParseShardIndex(bytes, path);
}

}  // namespace feedline::storage
