// Pipeline: decode + transforms for one image, fused so that only the pixels
// the output needs are decoded.
//
// Before decoding, a plan step reads the image size from the header and folds
// the geometric transforms (Resize, CenterCrop, RandomResizedCrop, flips) into
// one source box in image coordinates plus an output size. The decoder then
// decodes only that box, at the largest DCT scale that still covers the
// output; one resampling produces the output size; flip, normalization and
// the layout change are written in one pass straight into the destination
// (the batch row when the dataset declared the field fixed). When the list
// has pixel augmentations (ColorJitter, TrivialAugmentWide, RandAugment,
// AutoAugment, RandomPhotometricDistort), the resampled image goes through
// a uint8 buffer where they run before the write; RandomErasing works on
// the written output. A RandomPhotometricDistort listed before a geometric
// step runs on the whole decoded image instead, as torchvision's runs on
// the image before the crops. Detection's RandomZoomOut and RandomIoUCrop
// fold into the source box too: the canvas is the box reaching past the
// image, filled, and the IoU crop is chosen from the objects' boxes
// (PlanBoxes) before decoding.
// docs/vision.md explains the path and its accuracy.
//
// Thread safety: a Pipeline is immutable after construction; Run is const
// and may be called from many threads at once.
//
// Example:
//   Pipeline train = TrainPipeline(224);             // f32 [3, 224, 224]
//   train.Run(bytes, path, sample, "image", ctx);   // inside Dataset::Get
#ifndef FEEDLINE_VISION_PIPELINE_H_
#define FEEDLINE_VISION_PIPELINE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/tensor.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/random_erasing.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

namespace internal {
struct ValueMap;
}

struct FEEDLINE_EXPORT PipelineOptions {
  // f32 and f16 hold x / 255, or with Normalize fmaf(x, 1 / (255 std),
  // -mean / std) (the two constants rounded to float; within an ulp or two
  // of torchvision's (x / 255 - mean) / std). u8 holds the pixels
  // (Normalize is then an error: normalize on the accelerator).
  DType dtype = DType::kF32;
  DecodeOptions decode;
  // false decodes every image whole at full scale and crops afterwards: the
  // reference the fused path is measured against (docs/vision.md).
  bool fused = true;
};

// What a pipeline will do with one image, decided before decoding.
struct FEEDLINE_EXPORT PipelinePlan {
  // The source box, in image pixels. Its edges are snapped to multiples of
  // max_scale (or to the image's edge), moving them by at most max_scale / 2
  // from where the transforms put them. Parts outside the image are padding
  // in `fill` (a CenterCrop larger than the image, a zoom-out's canvas, a
  // FixedSizeCrop's margin).
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
  // The output size.
  int out_height = 0;
  int out_width = 0;
  bool flip = false;
  Interpolation interpolation = Interpolation::kBilinear;
  // The source image's size, as its header gave it.
  int image_height = 0;
  int image_width = 0;
  // The largest DCT downscale that keeps the box at least as large as the
  // output (1, 2, 4 or 8); 1 for nearest-neighbour output.
  int max_scale = 1;
  // The colour of the output pixels outside the image (RandomZoomOut's
  // fill; black otherwise).
  std::array<uint8_t, 3> fill = {0, 0, 0};
  // After a RandomIoUCrop, one entry per box of the PlanBoxes: 1 for the
  // objects it keeps (their box centre strictly inside the crop, in the
  // pixels of the image it cropped, as the references test it), 0 for the
  // rest. Empty without a crop: every object is kept.
  std::vector<uint8_t> kept_boxes;
};

// The boxes (x0, y0, x1, y1) of an image's objects, which RandomIoUCrop
// chooses its crop from: in the source image's pixels or, when
// `normalized`, as fractions of its width and height (YOLO's labels, in
// pixels only once the header gives the size). Plan clamps them to the
// image and passes over those left without a width and a height, as the
// detection datasets do with their objects.
struct FEEDLINE_EXPORT PlanBoxes {
  std::span<const std::array<float, 4>> boxes;
  bool normalized = false;
};

// Where one image's pixels go in an image made of several (a mosaic's
// tiles): its plan (source box and output size; an out_width or out_height
// of 0 when none of it shows) and where the plan's output lands.
struct FEEDLINE_EXPORT TilePlacement {
  PipelinePlan plan;
  int left = 0;
  int top = 0;
};

// One tile of a composite drawn straight into the output
// (Pipeline::DrawComposite): a decoded image (DecodeForTiles'), its pixels
// and where its plan's output lands.
struct FEEDLINE_EXPORT CompositeTile {
  const DecodedImage* image = nullptr;
  const uint8_t* pixels = nullptr;
  TilePlacement placement;
};

class FEEDLINE_EXPORT Pipeline {
 public:
  // The SampleContext scratch buffers Run uses: those above a dataset's own
  // (SampleContext::kDatasetScratchSlots), so a dataset that calls Run may
  // keep its file's bytes in any slot below.
  enum ScratchSlot : int {
    kDecodedSlot = SampleContext::kDatasetScratchSlots,  // the decoded pixels
    kResampledSlot,                                      // the resized pixels
    kWorkSlot,                                           // augmentation scratch
  };
  static_assert(kWorkSlot < SampleContext::kScratchSlots, "Run needs three scratch slots");

  // Throws Error if a transform is invalid or the list cannot be run:
  // Normalize with a u8 output, Normalize / ToCHW / RandomIoUCrop listed
  // twice, a geometric step after an augmentation (they are folded into the
  // decode; a RandomPhotometricDistort before every geometric step is the
  // exception), a pixel augmentation after Normalize or RandomErasing,
  // RandomErasing with a u8 output, or two steps that pad with different
  // colours (CenterCrop black, RandomZoomOut and FixedSizeCrop their fill).
  explicit Pipeline(std::vector<Transform> transforms, PipelineOptions options = {});

  const std::vector<Transform>& transforms() const { return transforms_; }
  const PipelineOptions& options() const { return options_; }
  DType dtype() const { return options_.dtype; }
  // True when the output is [3, H, W] (ToCHW listed), else [H, W, 3].
  bool chw() const { return chw_; }

  // The output shape if it is the same for every image (a crop or a
  // two-sided Resize comes last among the geometric steps).
  std::optional<Shape> FixedShape() const;
  // The output shape for an image of height x width. Throws Error when a
  // step's output size is random (RandomZoomOut, RandomIoUCrop,
  // RandomShortestSize, ScaleJitter): Plan gives an image's.
  Shape OutputShape(int height, int width) const;

  // Draws the random parameters, in transform order, from `rng`; a
  // RandomIoUCrop chooses from `boxes`.
  PipelinePlan Plan(int height, int width, Rng& rng, PlanBoxes boxes = {}) const;

  // Decodes `data` and writes the result into field `field` of `out`:
  // Allocate(field, dtype(), the plan's output shape), so the last step writes
  // straight into a batch row when the field is bound. Randomness comes from
  // ctx.rng(); decode and transform time go to ctx's stage timers; buffers
  // are ctx.scratch(ScratchSlot). Throws SampleError naming `source`.
  // `jpeg_restarts`: where the restart intervals of `data` start, when it is
  // a JPEG with a restart marker every MCU row (DecodeRequest::jpeg_restarts;
  // packed shards keep them): a crop then decodes only from its rows on.
  // `plan_used`, when given, receives the plan the image went through, so
  // that annotations in image pixels (boxes, polygons) can follow it;
  // `boxes` are its objects, for a RandomIoUCrop.
  void Run(std::span<const uint8_t> data, std::string_view source, Sample& out,
           std::string_view field, SampleContext& ctx,
           std::span<const uint32_t> jpeg_restarts = {},
           PipelinePlan* plan_used = nullptr, PlanBoxes boxes = {}) const;

  // For an image made of several (a mosaic), whose tiles each show a part
  // of it: decodes `data` whole into the start of `pixels` (grown if
  // needed, never shrunk, so a used buffer is reused), at the largest JPEG DCT
  // downscale that leaves its longer side `min_long_side` pixels or more (full
  // scale unless options().fused). The result depends on the data and
  // `min_long_side` alone, so it may be kept and drawn from by any sample.
  // Counts the decode in ctx (StatsSnapshot::images_decoded) and times it.
  // Throws SampleError naming `source`.
  DecodedImage DecodeForTiles(std::span<const uint8_t> data, std::string_view source,
                              int min_long_side, std::vector<uint8_t>& pixels,
                              SampleContext& ctx) const;
  // Resamples the placement's source box of `image` (DecodeForTiles'
  // result; `pixels` its pixels) into `composite` (u8 RGB) at the
  // placement, leaving the other pixels as they are; nothing when the plan
  // is empty. `mirrored`: the tile as it shows in the composite mirrored
  // left-right (its place and its pixels), so that a flip of the whole
  // costs no pass of its own. The placement must lie inside `composite`
  // (Error). Times go to ctx's transform stage.
  void DrawTile(const DecodedImage& image, const uint8_t* pixels, const TilePlacement& tile,
                bool mirrored, RgbImageView composite, SampleContext& ctx) const;
  // The composite of `tiles` (none overlapping), width x height, written
  // straight into field `field` of `out` in the output's dtype and layout:
  // `fill` (a u8 level) where no tile lands, each tile resampled into its
  // rectangle (mirrored left-right, place and pixels, when `mirrored`),
  // then RandomErasing: what DrawTile on a composite filled with `fill`
  // and WriteComposite give, to the bit, without the composite and its
  // pass to the output. Returns false, writing nothing, where that path
  // cannot run: a pixel augmentation listed (it needs the RGB composite),
  // or a tile that needs another filter than the one-pass bilinear kernel.
  // Throws Error for a placement outside the image.
  bool DrawComposite(std::span<const CompositeTile> tiles, int width, int height, uint8_t fill,
                     bool mirrored, Sample& out, std::string_view field,
                     SampleContext& ctx) const;
  // Writes `image`, made outside the pipeline (DrawTile's composite, its
  // flip drawn in), into field `field` of `out` as Run ends: the pixel
  // augmentations in list order (in place, on `image`), then the values
  // and the layout, then RandomErasing. The list's geometric steps are the
  // caller's to draw (Plan). Randomness from ctx.rng().
  void WriteComposite(RgbImageView image, Sample& out, std::string_view field,
                      SampleContext& ctx) const;

  // Whether RandomIoUCrop is listed: it chooses its crop from the objects,
  // so a dataset without objects refuses the pipeline.
  bool ChoosesFromBoxes() const;
  // Throws Error naming `dataset` when ChoosesFromBoxes(): for the datasets
  // whose samples have no objects (it would never crop).
  void CheckWithoutObjects(const std::string& dataset) const;

  // "random_resized_crop(224); random_horizontal_flip(0.5); ... -> f32".
  std::string ToString() const;

 private:
  std::vector<Transform> transforms_;
  PipelineOptions options_;
  bool chw_ = false;
  // How pixel values become output values (shared by copies: immutable).
  std::shared_ptr<const internal::ValueMap> values_;
  // Whether a pixel augmentation is listed after the geometric steps: the
  // image then goes through a uint8 buffer instead of straight into the
  // output.
  bool pixel_augmentations_ = false;
  // The RandomPhotometricDistort steps listed before a geometric step
  // (indices into transforms_): they run on the whole decoded image.
  std::vector<size_t> early_augmentations_;
  // The index of the first geometric step (0 when there is none): the
  // pixel augmentations from it on (after the last one, or the constructor
  // refuses them) run on the output's pixels.
  size_t first_late_ = 0;
  // The RandomErasing steps (indices into transforms_), with the Normalize
  // their values go through when listed before it.
  std::vector<std::pair<size_t, ErasingNormalization>> erasing_;
};

// The plan that resamples the source box (x, y, width, height), in pixels
// of an image of image_width x image_height, to out_width x out_height,
// bilinear and unmirrored, with the DCT scale and the snapping that Plan
// gives its boxes: for boxes chosen outside a pipeline (a mosaic's tiles).
FEEDLINE_EXPORT PipelinePlan PlanSourceBox(double x, double y, double width, double height,
                                           int out_width, int out_height, int image_width,
                                           int image_height);

// The standard ImageNet training recipe: RandomResizedCrop(size),
// RandomHorizontalFlip(0.5), then for float outputs Normalize(ImageNet) and
// ToCHW; a u8 output stays HWC and unnormalized.
// `decode` sets the decoder's limits (max_pixels).
FEEDLINE_EXPORT Pipeline TrainPipeline(int size = 224, DType dtype = DType::kF32,
                                       const DecodeOptions& decode = {});
// The standard evaluation recipe: Resize(resize), CenterCrop(crop), then as
// TrainPipeline.
FEEDLINE_EXPORT Pipeline ValPipeline(int resize = 256, int crop = 224, DType dtype = DType::kF32,
                                     const DecodeOptions& decode = {});

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_PIPELINE_H_
