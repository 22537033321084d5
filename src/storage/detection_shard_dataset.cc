#include "feedline/storage/detection_shard_dataset.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>

#include "feedline/error.h"
#include "feedline/vision/detection_record.h"
#include "src/vision/detection_targets.h"
#include "src/vision/mosaic_image_cache.h"
#include "src/vision/mosaic_sample.h"

namespace feedline::storage {
namespace {

// Scratch buffers of Get (Pipeline::Run uses its own).
constexpr int kBytesSlot = 0;
constexpr int kCanvasSlot = 1;  // a mosaic's tiles
static_assert(kCanvasSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");

constexpr const char* kName = "detection shard dataset";

// The record's annotations, or a SampleError naming the shard and key.
vision::DetectionRecord Decode(const ShardDataset& shards, int64_t record,
                               std::span<const uint8_t> bytes, int64_t index) {
  try {
    return vision::DecodeDetectionRecord(bytes, shards.Source(record));
  } catch (const SampleError&) {
    throw;
  } catch (const Error& e) {
    throw SampleError(FailureKind::kDecode, shards.Source(record),
                      std::string(e.what()) + " (shard " +
                          shards.shards()[static_cast<size_t>(shards.shard_of(record))] +
                          ", key " + shards.key(record) + ")",
                      index);
  }
}

}  // namespace

DetectionShardDataset::DetectionShardDataset(std::vector<std::string> index_files,
                                             vision::Pipeline pipeline,
                                             DetectionShardOptions options)
    : pipeline_(std::move(pipeline)), options_(std::move(options)) {
  const std::string name =
      std::string(kName) + (index_files.empty() ? std::string() : " " + index_files.front());
  vision::CheckDetectionOptions(name, pipeline_, vision::ReadOptions{},
                                options_.size_divisibility);
  if (options_.mosaic) {
    vision::CheckMosaicOptions(*options_.mosaic, name);
    vision::CheckMosaicPipeline(pipeline_, *options_.mosaic, name);
    if (options_.masks && options_.source_masks) {
      throw Error(name + ": masks at the source's size (masks=\"source\") with mosaic are not "
                         "supported: a mosaic's masks are drawn at its output");
    }
    mosaic_cache_ = std::make_shared<vision::MosaicImageCache>(options_.mosaic->cache_bytes);
  }
  // The records are read through a ShardDataset: its pipeline is not used.
  shards_ = std::make_unique<ShardDataset>(std::move(index_files), vision::Pipeline({}),
                                           std::vector<std::string>{}, options_.max_open_shards,
                                           options_.remote);
  for (int64_t r = 0; r < shards_->size(); ++r) {
    if (shards_->annotation_size(r) == 0) {
      throw Error(shards_->shards()[static_cast<size_t>(shards_->shard_of(r))] + ": record " +
                  shards_->key(r) +
                  " has no annotations: this is a pack of images alone; pack the detection "
                  "data (a COCO instances file, a VOC image set or a YOLO images folder) with "
                  "'feedline pack SOURCE OUT'");
    }
    if (options_.skip_empty && !shards_->has_usable_box(r)) continue;
    records_.push_back(r);
  }
}

int64_t DetectionShardDataset::record(int64_t index) const {
  CheckIndex(index, size());
  return records_[static_cast<size_t>(index)];
}

std::pair<uint32_t, uint32_t> DetectionShardDataset::image_size(int64_t index) const {
  const int64_t r = record(index);
  const std::pair<uint32_t, uint32_t> size = shards_->image_size(r);
  if (size.first == 0 || size.second == 0) {
    throw Error(shards_->shards()[static_cast<size_t>(shards_->shard_of(r))] + ": record " +
                shards_->key(r) +
                ": the index holds no image size (a detection pack written before index "
                "version 4); pack the source again with 'feedline pack SOURCE OUT'");
  }
  return size;
}

std::string DetectionShardDataset::Source(int64_t index) const {
  return shards_->Source(record(index));
}

std::vector<std::string> DetectionShardDataset::PaddedFields() const {
  return vision::DetectionObjectFields(options_.masks);
}

std::vector<PadMultiple> DetectionShardDataset::PadMultiples() const {
  return vision::DetectionImagePadding(pipeline_, options_.size_divisibility);
}

void DetectionShardDataset::EpochOrder(std::span<const int64_t> order) const {
  std::vector<int64_t> records;
  records.reserve(order.size());
  for (int64_t index : order) {
    records.push_back(index >= 0 && index < size() ? records_[static_cast<size_t>(index)] : -1);
  }
  shards_->EpochOrder(records);
}

void DetectionShardDataset::EpochProgress(int64_t delivered) const {
  shards_->EpochProgress(delivered);
}

void DetectionShardDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  if (options_.mosaic) return GetMosaic(index, out, ctx);
  const int64_t r = record(index);
  const ShardDataset::Record read = shards_->ReadRecord(r, ctx.scratch(kBytesSlot), ctx);
  const std::string name = shards_->Source(r);
  const vision::DetectionRecord record = Decode(*shards_, r, read.annotations, index);
  // The objects as CocoDetection converts them: crowds dropped unless
  // kept, corners clamped to the image once it is read (ClampToImage).
  std::vector<vision::ImageObject> objects;
  std::vector<const vision::DetectionObject*> sources;
  std::vector<std::array<float, 4>> corners;
  objects.reserve(record.objects.size());
  sources.reserve(record.objects.size());
  for (const vision::DetectionObject& o : record.objects) {
    if (o.crowd && !options_.keep_crowd) continue;
    objects.push_back(vision::ImageObject{o.box, o.category, o.area, o.crowd,
                                          static_cast<int32_t>(objects.size())});
    sources.push_back(&o);
  }
  if (pipeline_.ChoosesFromBoxes()) {
    for (const vision::ImageObject& o : objects) corners.push_back(o.box);
  }
  vision::PipelinePlan plan;
  pipeline_.Run(read.image, name, out, "image", ctx, read.jpeg_restarts, &plan,
                vision::PlanBoxes{corners});

  auto timer = ctx.Time(Stage::kTransform);
  const std::vector<size_t> kept = vision::ClampToImage(plan, objects);
  vision::WriteDetectionTargets(
      plan, objects, options_.masks,
      [&](size_t i, const vision::PlanGeometry& geometry, uint8_t* mask) {
        const vision::DetectionObject& o = *sources[kept[i]];
        if (o.segmentation == vision::CocoSegmentation::kPolygons) {
          for (uint32_t k = 0; k < o.count; ++k) {
            geometry.FillPolygon(record.polygon(o.first + k), mask);
          }
        } else if (o.segmentation == vision::CocoSegmentation::kRle) {
          vision::CheckMaskSize(record.masks[o.first], plan, name, index);
          geometry.FillRle(record.masks[o.first], mask);
        } else {
          vision::FillBox(objects[i].box, geometry, mask);  // no segmentation: its box
        }
      },
      out,
      options_.source_masks ? vision::MaskPlacement::kSourceMirrored
                            : vision::MaskPlacement::kOutput);
  out.SetScalar<int64_t>("image_id", record.image_id);
}

void DetectionShardDataset::GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const {
  // A tile's record read once when its image is decoded: the annotations
  // wait for the objects of the same image, asked for after the images. An
  // image the cache held was not read: its record is read for them then.
  std::vector<uint8_t> record_bytes;
  std::unordered_map<int64_t, vision::DetectionRecord> records;
  const auto read_record = [&](int64_t sample) {
    const int64_t r = record(sample);
    const ShardDataset::Record read = shards_->ReadRecord(r, record_bytes, ctx);
    records[sample] = Decode(*shards_, r, read.annotations, sample);
    return read;
  };
  vision::MosaicImages images;
  images.read = [&](int64_t sample, std::vector<uint8_t>& bytes) {
    const ShardDataset::Record read = read_record(sample);
    bytes.assign(read.image.begin(), read.image.end());
    return shards_->Source(record(sample));
  };
  // The objects as CocoDetection's mosaic converts them (crowds dropped
  // unless kept, corners clamped to the image).
  // Each record's objects in the order objects() listed them, for masks.
  std::unordered_map<int64_t, std::vector<const vision::DetectionObject*>> listed;
  images.objects = [&](int64_t sample, int height, int width) {
    if (!records.contains(sample)) read_record(sample);
    std::vector<vision::ImageObject> objects;
    std::vector<const vision::DetectionObject*>& sources = listed[sample];
    sources.clear();
    const float w = static_cast<float>(width), h = static_cast<float>(height);
    for (const vision::DetectionObject& o : records[sample].objects) {
      if (o.crowd && !options_.keep_crowd) continue;
      objects.push_back(vision::ImageObject{
          {std::clamp(o.box[0], 0.0f, w), std::clamp(o.box[1], 0.0f, h),
           std::clamp(o.box[2], 0.0f, w), std::clamp(o.box[3], 0.0f, h)},
          o.category, o.area, o.crowd});
      sources.push_back(&o);
    }
    return objects;
  };
  if (options_.masks) {
    images.draw_mask = [&](int64_t sample, size_t object,
                           const vision::MosaicImages::MaskTarget& to) {
      const vision::DetectionRecord& annotations = records.at(sample);
      const vision::DetectionObject& o = *listed.at(sample)[object];
      if (o.segmentation == vision::CocoSegmentation::kPolygons) {
        for (uint32_t k = 0; k < o.count; ++k) {
          to.geometry.FillPolygon(annotations.polygon(o.first + k), to.mask);
        }
      } else if (o.segmentation == vision::CocoSegmentation::kRle) {
        vision::CheckMaskSize(annotations.masks[o.first], to.plan,
                              shards_->Source(record(sample)), sample);
        to.geometry.FillRle(annotations.masks[o.first], to.mask);
      } else {
        vision::FillBox(to.box, to.geometry, to.mask);  // no segmentation: its box
      }
    };
  }
  WriteMosaicSample(pipeline_, *options_.mosaic, index, size(), images, *mosaic_cache_,
                    ctx.scratch(kBytesSlot), ctx.scratch(kCanvasSlot), out, ctx);
  out.SetScalar<int64_t>("image_id", records.at(index).image_id);  // tile 0 is its own image
}

}  // namespace feedline::storage
