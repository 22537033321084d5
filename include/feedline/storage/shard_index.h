// The index of one packed shard (shard-NNNNNN.idx beside shard-NNNNNN.tar):
// where each record's image lies in the tar, its label and checksum, so that
// a record is read with one positioned read and checked.
//
// Layout (little-endian; docs/storage.md has the table):
//   header, 48 bytes (version 1) or 56 (versions 2 to 4):
//     magic "FLSHIDX1" (8), version u32 (1 to 4), record size u32 (40;
//     48 in version 3, 56 in version 4),
//     record count u64, first record u64 (the global index of record 0 over
//     all shards of the pack), tar size u64 (the complete tar's length),
//     key bytes u64, and in version 2 restart entries u64
//   records, 40 bytes each (48 in version 3, 56 in version 4):
//     offset u64 (the image member's data in the tar; its 512-byte tar
//     header lies just before), size u64, label i64, key offset u32,
//     key size u16, format u8 (1 JPEG, 2 PNG, 3 WebP), flags u8 (0 before
//     version 3; from version 3 bit 0: the annotations have a box over 1
//     pixel wide and high), crc32c u32 (of the image bytes), restart count
//     u32 (version 2; 0 in version 1, where it is reserved), from version
//     3 annotation size u32 and annotation crc32c u32: a detection pack's
//     record carries its image's annotations (vision/detection_record.h) in
//     the member KEY.det right after the image's (its tar header at the
//     image's padded end); size 0: none; and in version 4 image height u32
//     and image width u32 (DetectionRecord::image_height and image_width),
//     so that images are grouped by aspect ratio without reading them
//   keys: the records' keys back to back (the tar member names without the
//     extension; [A-Za-z0-9_-], 1 to 64 characters)
//   version 2: restart offsets u32, the records' back to back in record
//     order: where each restart interval of a JPEG rewritten with restart
//     markers starts, in bytes from the image's first byte (see
//     DecodeRequest::jpeg_restarts); none for other images
//   crc32c u32 of everything before it.
//
// Version 1 indexes (written before restart markers) still parse; they
// serialize back as version 1, version 3 indexes (detection packs written
// before image sizes were kept) as version 3. Packs of images alone are
// written in version 2, detection packs in version 4.
//
// Parsing checks everything a reader relies on, so a damaged or truncated
// index is refused with a message naming the file and the defect, never
// read out of bounds: the exact file size, the checksum, each record inside
// the tar, 512-byte aligned, in increasing order without overlap, each key
// inside the key bytes.
//
// Thread safety: ShardIndex is a value; ParseShardIndex is reentrant.
#ifndef FEEDLINE_STORAGE_SHARD_INDEX_H_
#define FEEDLINE_STORAGE_SHARD_INDEX_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/vision/decode.h"

namespace feedline::storage {

inline constexpr char kShardIndexMagic[8] = {'F', 'L', 'S', 'H', 'I', 'D', 'X', '1'};
inline constexpr uint32_t kShardIndexVersion = 2;
// Detection packs: annotations from version 3, image sizes from version 4.
inline constexpr uint32_t kShardIndexVersionAnnotated = 4;
inline constexpr size_t kShardIndexHeaderBytes = 56;      // version 2
inline constexpr size_t kShardIndexHeaderBytesV1 = 48;    // version 1
// More restart intervals than a JPEG of the largest size with one per MCU
// row can have (65535 / 8 rows, rounded up).
inline constexpr size_t kMaxJpegRestarts = 8192;
inline constexpr size_t kShardIndexRecordBytes = 40;
inline constexpr size_t kShardIndexRecordBytesV3 = 48;
inline constexpr size_t kShardIndexRecordBytesV4 = 56;
// A record's annotations: more than any image's objects need.
inline constexpr uint64_t kMaxAnnotationBytes = uint64_t{256} << 20;
inline constexpr size_t kMaxShardKeyBytes = 64;
// Tar members are laid out in 512-byte blocks.
inline constexpr uint64_t kTarBlock = 512;

struct FEEDLINE_EXPORT ShardRecord {
  uint64_t offset = 0;  // of the image bytes in the tar
  uint64_t size = 0;
  int64_t label = 0;
  uint32_t crc32c = 0;
  vision::ImageFormat format = vision::ImageFormat::kJpeg;
  std::string key;
  // Version 2: where the restart intervals of a JPEG rewritten with restart
  // markers start (offsets into the image bytes, increasing, inside them);
  // empty for an image kept unchanged.
  std::vector<uint32_t> jpeg_restarts;
  // Version 3: the size and CRC-32C of the record's annotations (the
  // member KEY.det after the image's; 0: none), and whether they have a box
  // over 1 pixel wide and high (DetectionRecord::has_usable_box).
  uint32_t annotation_size = 0;
  uint32_t annotation_crc32c = 0;
  bool has_usable_box = false;
  // Version 4: the image's size as the source lists it (0 in version 3).
  uint32_t image_height = 0;
  uint32_t image_width = 0;
};

// Where record `r`'s annotations start in the tar: past the image's padded
// data and the KEY.det member's header.
FEEDLINE_EXPORT uint64_t AnnotationOffset(const ShardRecord& r);

struct FEEDLINE_EXPORT ShardIndex {
  // The format version the index was read in or is written in (1 to 4;
  // version 1 holds no restart offsets, versions 3 and 4 annotations, only
  // version 4 image sizes).
  uint32_t version = kShardIndexVersion;
  uint64_t first_record = 0;
  uint64_t tar_size = 0;
  std::vector<ShardRecord> records;
};

// ".jpg", ".png" or ".webp": the member's extension for an image format.
FEEDLINE_EXPORT const char* ShardExtension(vision::ImageFormat format);

// True if `key` is 1 to kMaxShardKeyBytes characters of [A-Za-z0-9_-].
FEEDLINE_EXPORT bool IsValidShardKey(std::string_view key);

// The index file's bytes. Throws Error if a record breaks the rules above.
FEEDLINE_EXPORT std::vector<uint8_t> SerializeShardIndex(const ShardIndex& index);

// Parses an index file's bytes; `name` (the file) starts every message.
// Throws Error("NAME: <what is wrong>") for any defect.
FEEDLINE_EXPORT ShardIndex ParseShardIndex(std::span<const uint8_t> bytes, const std::string& name);

// Reads and parses the index file at `path` (at most 1 GiB). Throws Error
// naming the file if it cannot be read or is damaged.
FEEDLINE_EXPORT ShardIndex ReadShardIndex(const std::string& path);

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_SHARD_INDEX_H_
