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

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/vision/mosaic.h"
#include "feedline/dataset.h"
#include "feedline/vision/pipeline.h"
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
};

// Throws Error naming `dataset` when `pipeline` lists a step that cannot
// follow a mosaic (any geometric step but RandomHorizontalFlip: the mosaic
// makes the size x size output itself) or when size x size is over the
// pipeline's max_pixels.
void CheckMosaicPipeline(const Pipeline& pipeline, const MosaicOptions& options,
                         const std::string& dataset);

// Writes sample `index` of a dataset of `size` images as a mosaic: "image"
// (the pipeline's dtype and layout, size x size), "boxes", "labels",
// "area" (each object's own, in its source pixels), "iscrowd" and
// "image_size". `bytes` holds each file read, `canvas` the tiles, and
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
