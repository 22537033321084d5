// TarIndexer: the shard index of a tar that has none beside it (a
// WebDataset-style shard, or a pack's tar whose .idx is missing), built by
// reading the tar once from its first byte, in pieces of any size as they
// arrive (a file read in chunks, or the body of one GET).
//
// A sample is a run of adjacent members sharing a key, WebDataset's way: the
// key is a member's name up to its first '.', the rest its extension. Each
// sample needs exactly one image (.jpg, .png or .webp: the names ShardDataset
// checks in each record's tar header) and one .cls member (its label, a
// decimal integer); other members (.json, .txt, ...) are skipped. The
// record's offset, size and CRC-32C are those of the image's bytes, so a
// feedline pack's tar gives back the index `feedline pack` wrote (less the
// JPEG restart offsets, which only make crops faster: the pixels are the
// same).
//
// Refused, with an Error naming the tar and the member: a member that is not
// a regular file (a folder, a link, a pax or GNU long-name header), a name
// without an extension or whose key is not [A-Za-z0-9_-]{1,64} (a path), a
// sample with no image, two images or no label, a key that comes back after
// another sample, a damaged header, a tar that ends inside a member.
//
// Thread safety: one instance per tar, used by one thread.
#ifndef FEEDLINE_SRC_STORAGE_TAR_INDEXER_H_
#define FEEDLINE_SRC_STORAGE_TAR_INDEXER_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "feedline/storage/shard_index.h"

namespace feedline::storage {

class TarIndexer {
 public:
  // `name` (the tar's path or URL) starts every message.
  explicit TarIndexer(std::string name) : name_(std::move(name)) {}

  // The next `size` bytes of the tar. Throws Error as above.
  void Feed(const uint8_t* data, size_t size);

  // The index, once every byte has been fed. Throws Error if the tar ended
  // inside a member or holds no sample.
  ShardIndex Finish();

 private:
  enum class Part { kHeader, kImage, kLabel, kSkipped, kPadding, kEnd };
  void OnHeader();
  void EndMember();
  void EndSample();
  [[noreturn]] void Fail(const std::string& what) const;

  const std::string name_;
  ShardIndex index_;
  uint64_t at_ = 0;  // bytes fed so far
  Part part_ = Part::kHeader;
  uint8_t header_[kTarBlock];
  size_t header_fill_ = 0;
  uint64_t left_ = 0;  // bytes of the current member's data (or padding) still to come
  uint64_t padding_ = 0;  // after the data
  std::string member_;  // the current member's name
  // The sample being gathered.
  std::string key_;
  bool has_image_ = false;
  bool has_label_ = false;
  ShardRecord record_;
  std::string label_text_;
  std::set<std::string> keys_done_;
};

// The index of a whole tar file on disk, read in large pieces. Throws
// OsError naming `path` if it cannot be read, Error as TarIndexer.
ShardIndex IndexTarFile(const std::string& path);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_TAR_INDEXER_H_
