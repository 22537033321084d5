// What a pack into a local folder tells the destination it is written for
// (s3_pack.h: the folder is a staging copy of an S3 prefix), at the points
// where the local pack's resume logic and its files change. With no hook
// set, the pack is the plain local one of feedline/storage/pack.h.
#ifndef FEEDLINE_SRC_STORAGE_PACK_HOOKS_H_
#define FEEDLINE_SRC_STORAGE_PACK_HOOKS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "feedline/storage/pack.h"
#include "feedline/storage/shard_index.h"

namespace feedline::storage {

struct PackHooks {
  // The name errors give the destination (a URL); empty: the folder's path.
  std::string destination;
  // Called once the folder is locked, before its pack.txt is read: the
  // destination may put its own pack.txt (and take the folder's away).
  std::function<void()> locked;
  // Resuming: called before the folder's index of `shard` is read, so that
  // it may be put there (fetched from the destination).
  std::function<void(int64_t shard)> before_index;
  // Resuming: whether the shard whose index `index` is valid is whole at
  // the destination. Unset: its tar in the folder has the index's size.
  std::function<bool(int64_t shard, const ShardIndex& index)> shard_whole;
  // Shards numbered `from` and above are gone from the folder (a restart,
  // a resume redoing them): the destination's are to go too.
  std::function<void(int64_t from)> shards_removed;
  // The shard's tar and index are finished (synced) in the folder.
  std::function<void(int64_t shard)> shard_finished;
  // OUT/`name` (pack.txt, classes.txt) was written with `text`.
  std::function<void(const std::string& name, const std::string& text)> text_written;
};

// PackImages into the local folder `out_dir`, calling `hooks`.
PackResult PackImagesWithHooks(const std::string& source, const std::string& root,
                               const vision::ImageList& files,
                               const std::vector<std::string>& classes,
                               const std::string& out_dir, const PackOptions& options,
                               const PackHooks& hooks);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PACK_HOOKS_H_
