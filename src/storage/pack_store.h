// PackStore: where the files of a pack (pack.h) are read from, the seam under
// ShardDataset: the local file system (LocalPackStore: positioned reads of
// open descriptors), an HTTP(S) server (HttpPackStore: ranged GETs, no
// disk), or a server through the node's shard cache (CachedPackStore, when
// RemoteOptions::cache_dir is set). ShardDataset reads its manifest, classes, indexes and records
// through it alone, so every check it makes (sizes, CRC-32C, tar headers)
// holds for either.
//
// Locations are what ShardDataset::Find returns: paths, or URLs for a remote
// store; the tars are numbered in the order given to OpenPackStore.
//
// Thread safety: every method may be called from many threads at once.
#ifndef FEEDLINE_SRC_STORAGE_PACK_STORE_H_
#define FEEDLINE_SRC_STORAGE_PACK_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/storage/remote_options.h"
#include "feedline/storage/shard_index.h"

namespace feedline::storage {

// A shard of an epoch's plan (ShardDataset::EpochOrder) and the position,
// in samples of the epoch's order, of its last use.
struct PlannedShard {
  size_t shard = 0;
  int64_t last_use = 0;
};

class PackStore {
 public:
  virtual ~PackStore() = default;

  // The text of a small file of the pack (pack.txt, classes.txt), or nullopt
  // if it does not exist. Throws Error naming it if it exists but cannot be
  // read.
  virtual std::optional<std::string> ReadText(const std::string& location) const = 0;

  // The parsed shard index at `location`, or nullopt if there is no such
  // file (then IndexTar builds one). Throws Error naming it if it is
  // unreadable or damaged.
  virtual std::optional<ShardIndex> ReadIndex(const std::string& location) const = 0;

  // The index of tar `shard`, which has no index file at `index_location`,
  // built by reading the whole tar (TarIndexer). Throws Error naming
  // `index_location` as missing if the tar is missing too (OsError ENOENT
  // for a local one), else Error as TarIndexer.
  virtual ShardIndex IndexTar(size_t shard, const std::string& index_location) const = 0;

  // Throws Error (OsError for a local file) naming tar `shard` if it is
  // missing or shorter than `bytes`.
  virtual void CheckTar(size_t shard, uint64_t bytes) const = 0;

  // Reads bytes [offset, offset + size) of tar `shard` into `dst`. Throws
  // Error saying what failed (the caller adds the record). REQUIRES: size > 0.
  virtual void ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const = 0;

  // What is wrong with the bytes of a range just read (empty: nothing).
  using RangeCheck = std::function<std::string(const uint8_t* bytes)>;

  // Reads as ReadRange, then returns what `check` finds wrong with the
  // bytes (empty: nothing). A store that keeps a copy it can fetch again
  // (CachedPackStore) repairs a copy whose bytes fail, and reads and checks
  // them again. Default: no repair.
  virtual std::string ReadCheckedRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst,
                                       const RangeCheck& check) const {
    ReadRange(shard, offset, size, dst);
    return check(dst);
  }

  // Local: the bound on open tar files and how many are open. Remote: 0 and
  // the connections made (one per thread reading at the same time).
  virtual size_t max_open() const = 0;
  virtual size_t open_count() const = 0;

  // The epoch's shards in the order it first needs them (empty: no more
  // reads planned), then how many samples of its order are delivered: a
  // store that fetches ahead (CachedPackStore) follows them. Must not block
  // (called under the loader's lock). Default: nothing.
  virtual void PlanShards(std::vector<PlannedShard> plan) const { (void)plan; }
  virtual void PlanProgress(int64_t delivered) const { (void)delivered; }
};

// The store of `tars` (paths, or URLs if IsRemoteLocation; all of one kind,
// else Error). `max_open`: the bound on open local files (0: the default).
std::unique_ptr<PackStore> OpenPackStore(std::vector<std::string> tars, size_t max_open,
                                         const RemoteOptions& remote);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PACK_STORE_H_
