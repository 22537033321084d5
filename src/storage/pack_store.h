// PackStore: a pack's files (pack.h) read through ByteSources, the seam
// under ShardDataset. The pack format is read here, once, whatever holds
// the bytes: the manifest and classes as text, the indexes parsed and
// checked, a tar without an index indexed as it streams, each tar's length
// checked against its index, and each record's range read and checked by
// the caller's check (a source that keeps a copy repairs it when the check
// fails: ByteSource::Refetch).
//
// Where the bytes come from is the subclass's: the local file system
// (LocalPackStore), an HTTP(S) or S3 server (HttpPackStore), or a server
// through the node's shard cache (CachedPackStore, when RemoteOptions::
// cache_dir is set). A subclass gives the tars' sources (SetTars) and opens
// a source for any other file of the pack (OpenFile); what it may add is
// planning (PlanShards, PlanProgress: fetching ahead) and its counts.
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
#include "src/storage/byte_source.h"

namespace feedline::storage {

// A shard of an epoch's plan (ShardDataset::EpochOrder) and the position,
// in samples of the epoch's order, of its last use.
struct PlannedShard {
  size_t shard = 0;
  int64_t last_use = 0;
};

// Wraps each source a store opens, a cache's downloads included (a test's
// fault injection, ByteSourceWrapper); empty: none.
using SourceWrap = std::function<std::unique_ptr<ByteSource>(std::unique_ptr<ByteSource>)>;

class PackStore {
 public:
  virtual ~PackStore() = default;
  PackStore(const PackStore&) = delete;
  PackStore& operator=(const PackStore&) = delete;

  // The text of a small file of the pack (pack.txt, classes.txt), or nullopt
  // if it does not exist. Throws Error naming it if it exists but cannot be
  // read.
  std::optional<std::string> ReadText(const std::string& location) const;

  // The parsed shard index at `location`, or nullopt if there is no such
  // file (then IndexTar builds one). Throws Error naming it if it is
  // unreadable or damaged.
  std::optional<ShardIndex> ReadIndex(const std::string& location) const;

  // The index of tar `shard`, which has no index file at `index_location`,
  // built as the whole tar streams by (TarIndexer). Throws Error naming
  // `index_location` and the tar if the tar is missing too (OsError ENOENT
  // for a local one), else Error as TarIndexer.
  ShardIndex IndexTar(size_t shard, const std::string& index_location) const;

  // Throws Error (OsError for a local file) naming tar `shard` if it is
  // missing or shorter than `bytes`, its index's tar size, which the store
  // keeps (tar_bytes).
  void CheckTar(size_t shard, uint64_t bytes) const;

  // What is wrong with the bytes of a range just read (empty: nothing).
  using RangeCheck = std::function<std::string(const uint8_t* bytes)>;

  // Reads bytes [offset, offset + size) of tar `shard` into `dst`, then
  // returns what `check` finds wrong with them (empty: nothing); bytes that
  // fail are read and checked once more if the source fetched them anew
  // (ByteSource::Refetch). Throws Error saying what failed to read (the
  // caller adds the record). REQUIRES: size > 0.
  std::string ReadCheckedRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst,
                               const RangeCheck& check) const;

  // The source of tar `shard`.
  const ByteSource& tar(size_t shard) const { return *tars_.at(shard); }

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

 protected:
  explicit PackStore(SourceWrap wrap) : wrap_(std::move(wrap)) {}

  // The sources of the tars, in order; called once, by the constructor.
  void SetTars(std::vector<std::unique_ptr<ByteSource>> tars);
  // The source of a file of the pack other than its tars.
  virtual std::unique_ptr<ByteSource> OpenFile(const std::string& location) const = 0;
  // Each tar's size as its index gives it (CheckTar; 0 before).
  const std::vector<uint64_t>& tar_bytes() const { return tar_bytes_; }
  // `source` as the SourceWrap wraps it: for sources a subclass opens
  // itself (a cache's downloads).
  std::unique_ptr<ByteSource> Wrapped(std::unique_ptr<ByteSource> source) const;

 private:

  const SourceWrap wrap_;
  std::vector<std::unique_ptr<ByteSource>> tars_;
  // Written while the dataset is built, before any read or plan.
  mutable std::vector<uint64_t> tar_bytes_;
};

// The store of `tars` (paths, or URLs if IsRemoteLocation; all of one kind,
// else Error). `max_open`: the bound on open local files (0: the default).
// `wrap`: applied to every source the store opens.
std::unique_ptr<PackStore> OpenPackStore(std::vector<std::string> tars, size_t max_open,
                                         const RemoteOptions& remote, SourceWrap wrap = {});

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PACK_STORE_H_
