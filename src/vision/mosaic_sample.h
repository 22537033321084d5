// A detection dataset's mosaic sample (feedline/vision/mosaic.h): the draws
// from the sample's Rng, each image decoded once for its batch (found in
// the dataset's MosaicImageCache, or decoded whole and kept there) and each
// tile's source box resampled straight to its place in the output, the
// output written by the pipeline's last steps, and the four images'
// objects moved and filtered as the tiles moved them. The datasets give
// how to read an image and its objects.
//
// Thread safety: pure functions but for the cache, which is thread-safe.
#ifndef FEEDLINE_SRC_VISION_MOSAIC_SAMPLE_H_
#define FEEDLINE_SRC_VISION_MOSAIC_SAMPLE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/vision/mosaic.h"
#include "feedline/dataset.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/plan_geometry.h"
#include "feedline/vision/read_file.h"
#include "src/vision/detection_targets.h"
#include "src/vision/mosaic_image_cache.h"

namespace feedline::vision {

// How a dataset hands over its images.
struct MosaicImages {
  // Reads image `image`'s file into `bytes`; returns its name for errors
  // (its path).
  std::function<std::string(int64_t image, std::vector<uint8_t>& bytes)> read;
  // The read of a dataset whose sample `image` is the file Source(image):
  // timed as the sample's read stage.
  static std::function<std::string(int64_t, std::vector<uint8_t>&)> FilesOf(
      const Dataset& dataset, const ReadOptions& options, SampleContext& ctx) {
    return [&dataset, &options, &ctx](int64_t image, std::vector<uint8_t>& bytes) {
      std::string path = dataset.Source(image);
      auto timer = ctx.Time(Stage::kRead);
      ReadFile(path.c_str(), bytes, options);
      return path;
    };
  }
  // Image `image`'s objects, boxes in the pixels of its height x width
  // source. Objects without area may be left in: they are dropped.
  std::function<std::vector<ImageObject>(int64_t image, int height, int width)> objects;
  // Set by a dataset asked for masks: draws the mask of object `object` of
  // image `image` (its place in what objects() gave) into target.mask.
  // Called after objects() for that image.
  struct MaskTarget {
    const PipelinePlan& plan;         // the tile's: its source box to the tile
    const PlanGeometry& geometry;     // of that plan
    const std::array<float, 4>& box;  // the object's, source pixels, as objects() gave it
    uint8_t* mask;                    // uint8 [plan.out_height, plan.out_width], zeroed
  };
  std::function<void(int64_t image, size_t object, const MaskTarget& target)> draw_mask;
  // Set by a dataset asked for keypoints: image `image`'s object `object`'s
  // x, y, visibility triples in source pixels (KeypointTargets::source), of
  // keypoint_count keypoints; keypoint_flip as KeypointTargets::flip.
  std::function<std::span<const float>(int64_t image, size_t object)> keypoints;
  int keypoint_count = 0;
  std::vector<int32_t> keypoint_flip;
};

// Throws Error naming `dataset` when `pipeline` lists a step that cannot
// follow a mosaic (any geometric step but RandomHorizontalFlip: the mosaic
// makes the size x size output itself) or when size x size is over the
// pipeline's max_pixels.
void CheckMosaicPipeline(const Pipeline& pipeline, const MosaicOptions& options,
                         const std::string& dataset);

// Writes sample `index` of a dataset of `size` images as a mosaic: "image"
// (the pipeline's dtype and layout, size x size), "boxes", "labels",
// "area" (each object's own, in its source pixels), "iscrowd",
// "image_size", when images.draw_mask is set "masks" (uint8 [objects,
// size, size]: each object's mask drawn through its tile, so cut by the
// tile's edges, and mirrored with the mosaic) and when images.keypoints is
// set "keypoints" (float32 [objects, K, 3]: each moved as its tile moved
// its image, and mirrored; one outside its tile's part of the output, or
// unlabelled, (0, 0, 0)). `bytes` holds each file read, `canvas` the tiles, and
// `cache` the decoded images. Partners from ctx.batch() (DrawMosaic).
// Randomness from ctx.rng(): DrawMosaic, then the pipeline's flips (the
// whole mosaic mirrored), then its pixel augmentations. Throws SampleError
// naming the image that fails (a partner's too).
void WriteMosaicSample(const Pipeline& pipeline, const MosaicOptions& options, int64_t index,
                       int64_t size, const MosaicImages& images, MosaicImageCache& cache,
                       std::vector<uint8_t>& bytes, std::vector<uint8_t>& canvas, Sample& out,
                       SampleContext& ctx);

}  // namespace feedline::vision

#endif  // FEEDLINE_SRC_VISION_MOSAIC_SAMPLE_H_
