// Writes one shard: the tar (key.ext, key.det for a record with annotations,
// key.cls for each record, then the two zero blocks that end a tar) and, on Finish, its index, which is written
// under a temporary name and renamed only after the tar is on disk: an index
// exists only beside a complete tar.
#ifndef FEEDLINE_SRC_STORAGE_SHARD_WRITER_H_
#define FEEDLINE_SRC_STORAGE_SHARD_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feedline/storage/shard_index.h"

namespace feedline::storage {

// A detection pack's part of a record: the image's annotations (an encoded
// DetectionRecord) and what the index keeps beside them.
struct RecordAnnotations {
  std::span<const uint8_t> bytes;
  bool has_usable_box = false;
  uint32_t image_height = 0;
  uint32_t image_width = 0;
};

class ShardWriter {
 public:
  // Creates (or truncates) `tar_path`. Throws Error naming it on failure.
  ShardWriter(std::string tar_path, std::string index_path, uint64_t first_record);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Bytes a record of `size` image bytes and `annotation_size` bytes of
  // annotations adds to the tar.
  static uint64_t RecordBytes(uint64_t size, uint64_t annotation_size = 0);
  // Bytes of the tar if it were finished now.
  uint64_t FinishedBytes() const { return written_ + 2 * kTarBlock; }
  int64_t records() const { return static_cast<int64_t>(index_.records.size()); }

  // `jpeg_restarts`: the record's restart offsets (ShardRecord).
  // `annotations`: the image's, written as key.det after the image; any
  // makes the index a detection pack's (kShardIndexVersionAnnotated).
  void Add(const std::string& key, std::span<const uint8_t> image, vision::ImageFormat format,
           int64_t label, std::vector<uint32_t> jpeg_restarts = {},
           const RecordAnnotations& annotations = {});
  // Ends the tar, syncs it, writes the index. Returns the tar's size.
  uint64_t Finish();

 private:
  void Write(const void* data, size_t size);

  std::string tar_path_;
  std::string index_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  ShardIndex index_;
};

// Writes `bytes` to `path` through a temporary file, synced, then renamed.
void WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARD_WRITER_H_
