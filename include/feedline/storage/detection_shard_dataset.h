// DetectionShardDataset: a detection pack (`feedline pack` of COCO, VOC or
// YOLO data: each record an image and its annotations, KEY.det,
// vision/detection_record.h) as a Dataset of CocoDetection's samples
// (docs/detection.md): the same "image", "boxes", "labels", "masks",
// "image_id", "area", "iscrowd" and "image_size" as the source dataset
// gives with the same pipeline and options, bit for bit (YOLO's
// RandomIoUCrop aside: YoloDetection chooses the crop from the boxes as
// fractions of the image, a pack keeps them in pixels).
//
// Its shards are found and read as ShardDataset's (local paths, globs,
// brace lists, http(s):// and s3:// with the node's cache): a sample is one
// positioned read (one ranged GET) of the image and its annotations, both
// checked against the index's CRC-32C. A record that fails the check, or
// whose annotations do not decode, is a SampleError naming the shard and
// the key, for the loader's error policy. A shard whose records carry no
// annotations (a pack of images alone) is refused when the dataset is
// built, naming the shard and the record.
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   DetectionShardDataset train(ShardDataset::Find("s3://bucket/coco-train/"),
//                               Pipeline({Transform::RandomHorizontalFlip(0.5)}),
//                               {.masks = true});
#ifndef FEEDLINE_STORAGE_DETECTION_SHARD_DATASET_H_
#define FEEDLINE_STORAGE_DETECTION_SHARD_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/storage/remote_options.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/vision/mosaic.h"
#include "feedline/vision/pipeline.h"

namespace feedline::vision {
class MosaicImageCache;  // src/vision/mosaic_image_cache.h
}  // namespace feedline::vision

namespace feedline::storage {

// CocoDetectionOptions' meanings; keep_crowd also keeps VOC's difficult
// objects (packed as crowds), as VOCDetection's keep_difficult.
struct DetectionShardOptions {
  bool masks = false;
  bool source_masks = false;
  bool keep_crowd = false;
  bool skip_empty = false;
  int64_t size_divisibility = 1;
  std::optional<vision::MosaicOptions> mosaic;
  // As ShardDataset's.
  size_t max_open_shards = 0;
  RemoteOptions remote;
};

class FEEDLINE_EXPORT DetectionShardDataset : public Dataset {
 public:
  // `index_files` as ShardDataset's (ShardDataset::Find). Throws Error as
  // ShardDataset's constructor, for options CocoDetection refuses, and
  // naming the shard and record when a record has no annotations.
  DetectionShardDataset(std::vector<std::string> index_files, vision::Pipeline pipeline,
                        DetectionShardOptions options = {});

  int64_t size() const override { return static_cast<int64_t>(records_.size()); }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // "SHARD.tar:KEY".
  std::string Source(int64_t index) const override;
  std::vector<std::string> PaddedFields() const override;
  std::vector<PadMultiple> PadMultiples() const override;
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  const ShardDataset& shards() const { return *shards_; }
  const vision::Pipeline& pipeline() const { return pipeline_; }
  const DetectionShardOptions& options() const { return options_; }
  // The pack's record of sample `index` (they differ with skip_empty).
  int64_t record(int64_t index) const;
  // Sample `index`'s image (height, width) as the source listed it, from
  // the index (no image is read): what CocoDetection's and VOCDetection's
  // image_sizes give, for grouping by aspect ratio. Throws Error naming the
  // shard for a pack written before the index kept sizes (version 3).
  std::pair<uint32_t, uint32_t> image_size(int64_t index) const;

 private:
  void GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const;

  vision::Pipeline pipeline_;
  DetectionShardOptions options_;
  std::unique_ptr<ShardDataset> shards_;
  std::vector<int64_t> records_;  // sample i is record records_[i]
  // With a mosaic: the images its batches decoded lately.
  std::shared_ptr<vision::MosaicImageCache> mosaic_cache_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_DETECTION_SHARD_DATASET_H_
