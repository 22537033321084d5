// Mosaic: YOLO's training mosaic (Ultralytics v8's Mosaic followed by
// RandomPerspective with its defaults), planned before any image is decoded.
//
// A sample is four images, its own and three partners drawn uniformly from
// its batch (below), each resized so that its longer side is `size` (aspect kept)
// and placed around a centre (xc, yc) of a 2 size x 2 size canvas filled
// with 114: tile 0 ends at the centre from the top left, 1 from the top
// right, 2 from the bottom left, 3 from the bottom right, each cut by the
// canvas. The canvas is then scaled by a factor in [1 - scale, 1 + scale]
// about its centre, which lands at a point in [0.5 - translate, 0.5 +
// translate] x size of the size x size output. With no rotation or shear
// every tile's visible part maps to an axis-aligned rectangle of the
// output, so each tile is one source box of its image resampled once to
// its rectangle, and neither the canvas nor the parts of the images that do
// not reach the output are ever made. With probability 1 - p the sample is
// its own image alone, letterboxed into a size x size canvas and moved the
// same way (Ultralytics' path when the mosaic is off, as `close_mosaic`
// runs the last epochs).
//
// Partners come from the sample's batch (SampleContext::batch: the indices
// the sampler planned for it, itself included), so a batch shows only its
// own images and decodes each once, however many tiles show it (the
// datasets keep the decoded images a while: MosaicImageCache). A sample
// read alone (dataset[i]) or in a batch of one draws them from the whole
// dataset. Every draw
// comes from the sample's Rng(seed, epoch, index) and the batch is the
// sampler's, a function of (seed, epoch), so partners, centre, scale and
// translation do not depend on the worker count, and a resumed run meets
// the same ones. (Ultralytics draws partners from a buffer of images its
// worker loaded recently: ones of earlier batches too, but which ones
// depends on the worker count.)
//
// Thread safety: plain values and pure functions.
//
// Example:
//   const MosaicDraw draw = DrawMosaic(options, index, ctx.batch(), dataset.size(), ctx.rng());
//   for (int t = 0; t < draw.tiles; ++t) {
//     const MosaicTile tile = PlanMosaicTile(options, draw, t, height[t], width[t]);
//     ...  // decode tile.plan's source box into the output at (tile.ox0, tile.oy0)
//   }
#ifndef FEEDLINE_VISION_MOSAIC_H_
#define FEEDLINE_VISION_MOSAIC_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/pipeline.h"

namespace feedline::vision {

struct FEEDLINE_EXPORT MosaicOptions {
  int size = 640;           // the output's side (Ultralytics' imgsz), 1 to 16384
  double scale = 0.5;       // the canvas is scaled by [1 - scale, 1 + scale]; in [0, 1)
  double translate = 0.1;   // its centre lands at [0.5 - t, 0.5 + t] x size; in [0, 0.5]
  double p = 1.0;           // the probability of a mosaic (else the image alone); in [0, 1]
  // The decoded images the dataset keeps for the other samples of their
  // batch (and later ones), least recently used dropped first; >= 0. Only
  // the work depends on it, never a sample: 0 decodes every tile's image
  // anew. The default holds the batches a few workers have in flight.
  int64_t cache_bytes = int64_t{256} << 20;
  // The probability that a sample is blended with a second mosaic (Ultralytics'
  // MixUp, its `mixup` hyperparameter): the mosaic of a partner drawn from
  // the batch, as the tiles' partners are, with the partner's own draws.
  // The pixels are sample x r + partner x (1 - r), truncated, r drawn from
  // Beta(32, 32); the partner's objects follow the sample's. In [0, 1].
  double mixup = 0.0;
};

// Throws Error naming `dataset` and the argument when an option is outside
// its range.
FEEDLINE_EXPORT void CheckMosaicOptions(const MosaicOptions& options, const std::string& dataset);

// A sample's random draws, made before decoding.
struct FEEDLINE_EXPORT MosaicDraw {
  int tiles = 4;  // 4: a mosaic; 1: the sample's own image alone
  // The sample's index, then its partners (images[1..3], with tiles == 4).
  std::array<int64_t, 4> images{};
  // Where the tiles meet, in canvas pixels (a mosaic's).
  int xc = 0;
  int yc = 0;
  // The canvas is scaled by `scale` about its centre, which lands at
  // (tx, ty) in output pixels.
  double scale = 1;
  double tx = 0;
  double ty = 0;
};

// Draws, in this order: the mosaic's coin, 3 partners uniformly from
// `batch` (the sample's: SampleContext::batch), or from [0, dataset_size)
// when it holds under 2 (a sample read alone, batches of one), xc and yc (whole pixels, uniformly from [size / 2,
// 3 size / 2)), the scale, tx and ty. Everything is drawn whatever the coin
// says, so that later draws from `rng` (a flip) are the same either way.
// REQUIRES: dataset_size > 0.
FEEDLINE_EXPORT MosaicDraw DrawMosaic(const MosaicOptions& options, int64_t index,
                                      std::span<const int64_t> batch, int64_t dataset_size,
                                      Rng& rng);

// A sample's mixup draws (MosaicOptions::mixup).
struct FEEDLINE_EXPORT MixupDraw {
  bool mixed = false;
  int64_t partner = 0;  // the image whose mosaic is blended in
  double ratio = 1;     // the sample's weight, r
};

// The stream of a sample's mixup draws, Rng(seed, epoch, index,
// kMixupStream): apart from the sample's own, so that mixup changes no
// other draw of a sample.
inline constexpr uint64_t kMixupStream = 0x4D49585550000001ull;

// Draws from `rng` (the sample's mixup stream), in this order: the coin,
// the partner (uniformly from `batch`, or from [0, dataset_size) when it
// holds under 2, as DrawMosaic's), r from Beta(32, 32); everything whatever
// the coin says. The partner's mosaic is then drawn from the same `rng`.
// REQUIRES: dataset_size > 0.
FEEDLINE_EXPORT MixupDraw DrawMixup(const MosaicOptions& options,
                                    std::span<const int64_t> batch, int64_t dataset_size,
                                    Rng& rng);

// Where one image of a sample goes.
struct FEEDLINE_EXPORT MosaicTile {
  // Its size once resized as Ultralytics' load_image resizes it (longer side
  // `size`, each side ceil(side x size / longer side) at most `size`), and
  // that resized image's top-left corner on the canvas.
  int resized_width = 0;
  int resized_height = 0;
  int left = 0;
  int top = 0;
  // The part of the canvas it shows: [canvas_x0, canvas_x1) x [canvas_y0,
  // canvas_y1).
  int canvas_x0 = 0;
  int canvas_y0 = 0;
  int canvas_x1 = 0;
  int canvas_y1 = 0;
  // A source pixel coordinate (x, y) lands at (x sx + dx, y sy + dy) in the
  // output: the boxes' transform.
  double sx = 1;
  double sy = 1;
  double dx = 0;
  double dy = 0;
  // The output pixels it fills, [ox0, ox1) x [oy0, oy1): its canvas part
  // mapped to the output, edges rounded to whole pixels (two tiles that
  // meet on the canvas meet on the same output pixel edge, so they never
  // overlap) and cut by the output. Empty when none of it shows.
  int ox0 = 0;
  int oy0 = 0;
  int ox1 = 0;
  int oy1 = 0;
  // The source box resampled to that rectangle: the inverse of the map
  // above (kept inside the image), as a PipelinePlan (PlanSourceBox).
  // Unset when empty().
  PipelinePlan plan;

  bool empty() const { return ox1 <= ox0 || oy1 <= oy0; }
};

// Tile `tile` (0 to draw.tiles - 1) of an image of image_width x
// image_height. REQUIRES: both > 0.
FEEDLINE_EXPORT MosaicTile PlanMosaicTile(const MosaicOptions& options, const MosaicDraw& draw,
                                          int tile, int image_height, int image_width);

// An object's box (x0, y0, x1, y1 in source pixels) in the output, as
// Ultralytics moves and filters it: on the canvas, clipped to the canvas
// and dropped without area; then scaled and moved, clipped to the output,
// and kept only when it is over 2 pixels wide and high, keeps over 10% of
// its area (against the canvas box scaled, unclipped by the output), and
// its aspect ratio is under 100 (box_candidates). nullopt when dropped.
FEEDLINE_EXPORT std::optional<std::array<float, 4>> MapMosaicBox(const MosaicOptions& options,
                                                                 const MosaicDraw& draw,
                                                                 const MosaicTile& tile,
                                                                 const std::array<float, 4>& box);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_MOSAIC_H_
