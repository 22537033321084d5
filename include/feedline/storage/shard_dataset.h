// ShardDataset: the records of packed shards (pack.h) as a Dataset of
// labelled images, run through the same Pipeline as ImageFolder.
//
// The indexes are read and checked when the dataset is built. A tar file is
// opened when first read and stays open: one descriptor per shard, shared by
// the threads (positioned reads share no file offset), at most
// `max_open_shards` at once (the least recently used is closed to make
// room), O_CLOEXEC, and opened anew in a forked worker process
// (src/storage/shard_files.h says why).
// A sample is one pread of the record's tar header and image bytes: the
// header must name the record's key and size, and the bytes' CRC-32C must
// match the index, else Get throws SampleError naming the shard, key and
// offset ("checksum" or "io"). Fields and FixedFields as ImageDataset.
// A JPEG that `feedline pack` rewrote with restart markers goes to the
// pipeline with its restart offsets from the index, so that a crop decodes
// only from its rows on (same pixels).
//
// A pack that an HTTP(S) server serves is read the same way, with no disk:
// Find("http://host/train/") lists its shards from its pack.txt, the
// indexes are fetched when the dataset is built, and a sample is one ranged
// GET (libcurl; each reading thread keeps its connection alive), checked as
// above. A request that fails is retried within RemoteOptions; what is left
// is a SampleError "io" naming the URL, the HTTP status or libcurl's error
// and the attempts, for the loader's error policy (remote_options.h).
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   ShardDataset train(ShardDataset::Find("/data/imagenet-shards"), TrainPipeline(224));
//   ShardDataset served(ShardDataset::Find("http://10.0.0.5/imagenet/train/"),
//                       TrainPipeline(224));
#ifndef FEEDLINE_STORAGE_SHARD_DATASET_H_
#define FEEDLINE_STORAGE_SHARD_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/storage/remote_options.h"
#include "feedline/vision/pipeline.h"

namespace feedline::storage {

class PackStore;

class FEEDLINE_EXPORT ShardDataset : public Dataset {
 public:
  // `index_files` are shard indexes (.idx), each beside its .tar. `classes`
  // names the labels; empty: read from classes.txt beside the first shard,
  // or "0" ... "N-1" if there is none. Throws Error naming the file if an
  // index is missing or damaged, a tar is missing or shorter than its index
  // says, a label is outside the classes, or the folder's pack.txt says the
  // pack is unfinished or holds another number of records.
  // `max_open_shards`: the most tar files open at once; 0: 256, or a quarter
  // of the process's descriptor limit if lower. Index files that are URLs
  // (IsRemoteLocation; all or none) are read over HTTP(S) with `remote`'s
  // retries and timeouts; a missing one is an Error naming the URL and the
  // HTTP status.
  ShardDataset(std::vector<std::string> index_files, vision::Pipeline pipeline,
               std::vector<std::string> classes = {}, size_t max_open_shards = 0,
               RemoteOptions remote = {});
  // As above, its files read through `store` (the storage layer's own
  // PackStore of the tars of `index_files`, from OpenPackStore): for readers
  // and tests that choose the store's sources.
  ShardDataset(std::vector<std::string> index_files, std::unique_ptr<PackStore> store,
               vision::Pipeline pipeline, std::vector<std::string> classes = {},
               RemoteOptions remote = {});
  ~ShardDataset() override;
  ShardDataset(const ShardDataset&) = delete;
  ShardDataset& operator=(const ShardDataset&) = delete;

  // The index files of `path_or_glob`: a folder (its shard-*.idx), a glob
  // pattern (each match, .tar or .idx, taken as its shard), or one .tar or
  // .idx file; sorted. Throws Error if nothing matches. A URL (http://,
  // https://, s3://): a pack's folder, whose pack.txt gives the shard count,
  // or one shard's .tar or .idx; globs are refused. A brace list, local or
  // remote ("http://h/train/shard-{000000..000099}.tar"), names its shards
  // in its order (their files are checked when the dataset is built).
  static std::vector<std::string> Find(const std::string& path_or_glob,
                                       const RemoteOptions& remote = {});

  int64_t size() const override { return static_cast<int64_t>(offsets_.size()); }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // "SHARD.tar:KEY".
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;
  // The loader's order of the epoch: a remote pack with a cache (cache_dir)
  // downloads its shards ahead of the reads, in the order the epoch first
  // needs them (RemoteOptions::prefetch_bytes). Otherwise nothing.
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  // Record `index` read and checked as Get reads it, into `buffer`: its
  // image, the image's JPEG restart offsets and, in a detection pack, its
  // annotations (checked against their own CRC-32C and tar header; empty
  // when it has none). Throws SampleError as Get. DetectionShardDataset reads
  // its records through this.
  struct Record {
    std::span<const uint8_t> image;
    std::span<const uint8_t> annotations;
    std::span<const uint32_t> jpeg_restarts;
  };
  Record ReadRecord(int64_t index, std::vector<uint8_t>& buffer, SampleContext& ctx) const;
  // The size of record `index`'s annotations (0: none), and whether they
  // have a box over 1 pixel wide and high (from the index).
  uint32_t annotation_size(int64_t index) const;
  bool has_usable_box(int64_t index) const;
  // The (height, width) of record `index`'s image as its source listed it
  // (a detection pack's index from version 4), or (0, 0) where the index
  // does not say.
  std::pair<uint32_t, uint32_t> image_size(int64_t index) const;

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<int64_t>& labels() const { return labels_; }
  const std::vector<std::string>& shards() const { return tar_paths_; }
  std::string key(int64_t index) const;
  // The shard of record `index`, and the first record of each shard.
  int64_t shard_of(int64_t index) const;
  const std::vector<int64_t>& shard_starts() const { return shard_starts_; }
  const vision::Pipeline& pipeline() const { return pipeline_; }
  // The retries and timeouts of a remote pack's requests (unused for a local one).
  const RemoteOptions& remote_options() const { return remote_; }
  // The bound on open tar files, and how many are open now. A remote pack:
  // 0, and the connections opened (one per thread that has read at once).
  size_t max_open_shards() const;
  size_t open_shards() const;

 private:
  vision::Pipeline pipeline_;
  std::vector<std::string> classes_;
  RemoteOptions remote_;
  std::vector<std::string> tar_paths_;
  std::unique_ptr<PackStore> store_;
  std::vector<int64_t> shard_starts_;  // first record of each shard
  // Per record, in columns (a million records cost 40 MB).
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> sizes_;
  std::vector<int64_t> labels_;
  std::vector<uint32_t> crcs_;
  std::vector<uint8_t> formats_;
  std::vector<uint32_t> annotation_sizes_;
  std::vector<uint32_t> annotation_crcs_;
  std::vector<bool> usable_boxes_;
  std::vector<std::pair<uint32_t, uint32_t>> image_sizes_;
  std::string keys_;  // back to back
  std::vector<uint64_t> key_ends_;
  // The JPEG restart offsets of all records back to back (4 bytes per MCU
  // row of a rewritten JPEG), and where each record's end.
  std::vector<uint32_t> restarts_;
  std::vector<uint64_t> restart_ends_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_SHARD_DATASET_H_
