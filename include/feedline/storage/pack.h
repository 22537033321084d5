// Packing an image dataset into shards: plain tar files in the WebDataset
// layout (key.jpg, key.cls with the label as decimal text), each with an
// index (shard_index.h) for random access, in one output folder:
//
//   OUT/shard-000000.tar  OUT/shard-000000.idx  ...  OUT/classes.txt  OUT/pack.txt
//
// Baseline JPEGs are rewritten losslessly with restart markers (same
// coefficients, so the same pixels; optimized Huffman tables): one every
// `jpeg_restart_mcus` MCUs (so that a crop skips the columns around it as
// well as the rows above it), or with that 0 one every `jpeg_restart_rows`
// MCU rows; the index records where each MCU row's data starts
// (docs/storage.md has the measurements). Progressive JPEGs are written as
// baseline ones with the same markers (unless jpeg_progressive_to_baseline
// is false); CMYK and damaged JPEGs, PNG and WebP are stored unchanged.
//
// A record's key is its position in the source listing ("000000042"), so a
// record names the file it came from. Shards are filled in listing order up
// to `shard_bytes` (a larger image gets a shard of its own).
//
// Resumable: a shard counts as written once its index exists (written to a
// temporary name and renamed after the tar is synced). Packing into a folder
// that holds an earlier, interrupted pack of the same source and shard size
// keeps the complete shards and redoes the rest, beginning with the last,
// partially written one. pack.txt records the source, the shard size and,
// once packing has finished, the record and shard counts.
//
// OUT may not be the source folder or lie inside it, nor (for a file list)
// be the list's folder or one holding listed files: refused with an Error
// before anything is written.
//
// OUT may also be an S3 prefix, s3://BUCKET/PREFIX/ (the endpoint and
// credentials of the standard AWS configuration, docs/storage.md): the pack
// is written to a local staging folder (PackOptions::staging_dir) and each
// shard is uploaded as soon as it is finished, its tar (a multipart upload
// when it is over 8 MiB) before its index, while the next shard is
// written; its tar is then deleted from the staging folder, which holds at
// most the shard being written and the one being uploaded, and the small
// files (indexes, pack.txt, the lock). pack.txt is uploaded first without
// the counts (an unfinished pack, which readers refuse) and again, after
// classes.txt, with them once every shard is up, so that a reader never
// sees a finished pack.txt before the shards it names. Resuming works as in
// a folder, with the bucket as the truth: a rerun keeps each shard whose
// tar and index are in the bucket at the sizes its index gives (the index
// is fetched from the bucket when the staging folder lacks it, e.g. on
// another machine) and packs and uploads the rest; a pack.txt in the
// bucket of another source or shard size is refused unless `restart`.
//
// Thread safety: one pack per output folder at a time. A pack holds an
// exclusive lock on OUT/.pack.lock (flock) while it runs; a second pack into
// the folder, from any process, fails at once with an Error naming it.
#ifndef FEEDLINE_STORAGE_PACK_H_
#define FEEDLINE_STORAGE_PACK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "feedline/export.h"
#include "feedline/storage/remote_options.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/detection_record.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/read_file.h"

namespace feedline::storage {

inline constexpr uint64_t kDefaultShardBytes = uint64_t{256} << 20;

struct FEEDLINE_EXPORT PackOptions {
  // A shard is closed before it would grow past this many bytes.
  uint64_t shard_bytes = kDefaultShardBytes;
  // Files larger than this are broken (as for the image datasets).
  int64_t max_file_bytes = vision::kDefaultMaxFileBytes;
  // false: a file that cannot be read or is no JPEG, PNG or WebP ends the
  // pack with an Error naming it; true: it is left out and listed.
  bool skip_broken = false;
  // false: an earlier pack in the folder is resumed (Error if it was of
  // another source or shard size); true: the folder's shards are replaced.
  bool restart = false;
  // MCU rows per restart interval of rewritten JPEGs; 0 stores every file's
  // bytes unchanged.
  int jpeg_restart_rows = 1;
  // MCUs per restart interval (the nearest divisor of a row's MCUs; 0:
  // whole rows, jpeg_restart_rows of them). 4 by default: on photo-like
  // JPEGs the files keep their size (optimized Huffman tables pay for the
  // markers) and the train pipeline runs 1.5x as fast as on unchanged
  // files, progressive ones written as baseline (docs/storage.md).
  int jpeg_restart_mcus = 4;
  // Progressive JPEGs are rewritten as baseline ones (the same
  // coefficients, so the same pixels) with the same restart markers, so
  // that their crops decode only their windows too; false stores them
  // unchanged. Ignored when jpeg_restart_rows is 0.
  bool jpeg_progressive_to_baseline = true;
  // Threads reading and rewriting files (0: one per core). The shards are
  // the same bytes whatever the number: files are prepared in parallel in
  // chunks and written in listing order.
  int threads = 0;
  // Called after each shard is finished with (records packed, total files).
  std::function<void(int64_t, int64_t)> on_progress;
  // A detection pack: each record carries its image's annotations, what
  // this returns for file `file` of the listing given its image's header,
  // in the member KEY.det after the image's (vision/detection_record.h),
  // with their size and CRC-32C and the record's image size in the index
  // (version 4). What it throws is the file's failure (skip_broken); called
  // from the packing threads at once. pack.txt records "annotations detection", so that a pack of the
  // images alone is not resumed as one with annotations, or the reverse.
  std::function<vision::DetectionRecord(int64_t file, const vision::ImageInfo& image)>
      annotations;

  // OUT in S3 (s3://BUCKET/PREFIX/) only:
  // The local folder the pack is written to before its files are uploaded
  // (created if missing; the pack's lock is held there). Empty: a folder
  // under the system's temporary folder named after the URL
  // (feedline-pack-BUCKET_PREFIX_-HASH), so that a rerun of the same pack
  // finds it.
  std::string staging_dir;
  // The retries and timeouts of each upload request (the cache fields are
  // not used).
  RemoteOptions remote;
};

struct FEEDLINE_EXPORT PackResult {
  int64_t records = 0;        // records in all shards
  int64_t shards = 0;         // shards in the folder
  int64_t reused_shards = 0;  // complete shards kept from an earlier run
  uint64_t bytes = 0;         // total size of the tar files
  // Of the records packed by this run: JPEGs rewritten with restart markers,
  // and their bytes before and after.
  int64_t rewritten_jpegs = 0;
  uint64_t rewritten_bytes_before = 0;
  uint64_t rewritten_bytes_after = 0;
  // Of those, the progressive JPEGs written as baseline ones, and their
  // bytes before and after.
  int64_t progressive_converted = 0;
  uint64_t progressive_bytes_before = 0;
  uint64_t progressive_bytes_after = 0;
  // (path, reason) of each file left out (skip_broken).
  std::vector<std::pair<std::string, std::string>> skipped;
};

// Packs `files` (paths relative to `root` unless absolute) labelled with
// indices into `classes`. `source` is the name recorded in pack.txt (the
// folder or list file given by the user). Throws Error naming the file for
// I/O failures, a broken file (unless skip_broken) or a folder holding
// another pack.
FEEDLINE_EXPORT PackResult PackImages(const std::string& source, const std::string& root,
                                      const vision::ImageList& files,
                                      const std::vector<std::string>& classes,
                                      const std::string& out_dir, const PackOptions& options);

// PackImages over an image folder (ImageFolder layout) or a file list
// ("path label" lines, paths relative to the list's folder). `out_dir` may
// be s3://BUCKET/PREFIX/ (see above); the staging folder must then lie
// outside the source, as OUT must.
FEEDLINE_EXPORT PackResult PackSource(const std::string& source, const std::string& out_dir,
                                      const PackOptions& options);

// "shard-000042.tar" / "shard-000042.idx".
FEEDLINE_EXPORT std::string ShardTarName(int64_t shard);
FEEDLINE_EXPORT std::string ShardIndexName(int64_t shard);

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_PACK_H_
