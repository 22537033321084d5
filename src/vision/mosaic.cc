#include "feedline/vision/mosaic.h"

#include <algorithm>
#include <cmath>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

constexpr int kMaxSize = 16384;
// box_candidates' thresholds (Ultralytics' defaults for boxes).
constexpr double kMinSide = 2;
constexpr double kMinAreaRatio = 0.1;
constexpr double kMaxAspect = 100;
constexpr double kEps = 1e-16;
// The letterbox's rounding of its margins (Ultralytics' round(d - 0.1)).
constexpr double kLetterboxBias = 0.1;

int Round(double v) { return static_cast<int>(std::floor(v + 0.5)); }

// The canvas's side: 2 size for a mosaic, size for the image alone.
int CanvasSide(const MosaicOptions& options, const MosaicDraw& draw) {
  return draw.tiles == 4 ? 2 * options.size : options.size;
}

// One canvas coordinate along an axis to output pixels.
double ToOutput(double canvas, double centre, double scale, double shift) {
  return scale * (canvas - centre) + shift;
}

// Both shapes of Ultralytics' Beta(32, 32) for the mixup ratio.
constexpr double kMixupShape = 32;

// A standard normal draw (Box-Muller; the second value is not kept, so
// that each draw takes a fixed number of the stream's values).
double Normal(Rng& rng) {
  const double u = 1 - rng.Uniform();  // in (0, 1]: its log is finite
  const double v = rng.Uniform();
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

// A Gamma(shape, 1) draw for shape >= 1 (Marsaglia and Tsang's squeeze and
// rejection: under 3% of tries rejected at shape 32).
double Gamma(double shape, Rng& rng) {
  const double d = shape - 1.0 / 3;
  const double c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double x = Normal(rng);
    const double t = 1 + c * x;
    if (t <= 0) continue;
    const double v = t * t * t;
    const double u = 1 - rng.Uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

void CheckMosaicOptions(const MosaicOptions& options, const std::string& dataset) {
  if (options.size < 1 || options.size > kMaxSize) {
    throw Error(dataset + ": mosaic size must be from 1 to " + std::to_string(kMaxSize) +
                ", got " + std::to_string(options.size));
  }
  if (!(options.scale >= 0 && options.scale < 1)) {
    throw Error(dataset + ": mosaic scale must be in [0, 1) (the canvas is scaled by 1 - scale "
                "to 1 + scale), got " + std::to_string(options.scale));
  }
  if (!(options.translate >= 0 && options.translate <= 0.5)) {
    throw Error(dataset + ": mosaic translate must be in [0, 0.5], got " +
                std::to_string(options.translate));
  }
  if (!(options.p >= 0 && options.p <= 1)) {
    throw Error(dataset + ": mosaic p must be in [0, 1], got " + std::to_string(options.p));
  }
  if (!(options.mixup >= 0 && options.mixup <= 1)) {
    throw Error(dataset + ": mosaic mixup must be in [0, 1], got " +
                std::to_string(options.mixup));
  }
  if (options.cache_bytes < 0) {
    throw Error(dataset + ": mosaic cache_bytes must be >= 0, got " +
                std::to_string(options.cache_bytes));
  }
}

MosaicDraw DrawMosaic(const MosaicOptions& options, int64_t index,
                      std::span<const int64_t> batch, int64_t dataset_size, Rng& rng) {
  MosaicDraw draw;
  const bool mosaic = rng.Uniform() < options.p;
  draw.tiles = mosaic ? 4 : 1;
  draw.images[0] = index;
  // A batch of one would show its image 4 times: the dataset's instead.
  const bool from_batch = batch.size() > 1;
  for (int k = 1; k < 4; ++k) {
    draw.images[k] =
        !from_batch
            ? static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(dataset_size)))
            : batch[static_cast<size_t>(rng.UniformInt(static_cast<uint64_t>(batch.size())))];
  }
  // Ultralytics' border of -size // 2: the centre keeps that far from the
  // canvas's edges.
  const int s = options.size;
  const double lo = (s + 1) / 2, hi = 2.0 * s - lo;
  draw.xc = static_cast<int>(std::floor(rng.Uniform(lo, hi)));
  draw.yc = static_cast<int>(std::floor(rng.Uniform(lo, hi)));
  draw.scale = rng.Uniform(1 - options.scale, 1 + options.scale);
  draw.tx = rng.Uniform(0.5 - options.translate, 0.5 + options.translate) * s;
  draw.ty = rng.Uniform(0.5 - options.translate, 0.5 + options.translate) * s;
  return draw;
}

MixupDraw DrawMixup(const MosaicOptions& options, std::span<const int64_t> batch,
                    int64_t dataset_size, Rng& rng) {
  MixupDraw draw;
  draw.mixed = rng.Uniform() < options.mixup;
  draw.partner = batch.size() > 1
                     ? batch[static_cast<size_t>(rng.UniformInt(static_cast<uint64_t>(batch.size())))]
                     : static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(dataset_size)));
  const double x = Gamma(kMixupShape, rng);
  const double y = Gamma(kMixupShape, rng);
  draw.ratio = x / (x + y);
  return draw;
}

MosaicTile PlanMosaicTile(const MosaicOptions& options, const MosaicDraw& draw, int tile,
                          int image_height, int image_width) {
  if (tile < 0 || tile >= draw.tiles) {
    throw Error("mosaic: tile " + std::to_string(tile) + " of " + std::to_string(draw.tiles));
  }
  if (image_height <= 0 || image_width <= 0) throw Error("mosaic: an image without pixels");
  const int s = options.size;
  const int canvas = CanvasSide(options, draw);
  MosaicTile t;
  const double r = static_cast<double>(s) / std::max(image_height, image_width);
  t.resized_width = r == 1 ? image_width : std::min(static_cast<int>(std::ceil(image_width * r)), s);
  t.resized_height =
      r == 1 ? image_height : std::min(static_cast<int>(std::ceil(image_height * r)), s);
  const int w = t.resized_width, h = t.resized_height;
  if (draw.tiles == 1) {
    // Letterboxed, centred; a side of exactly `size` leaves no margin.
    t.left = Round((s - w) / 2.0 - kLetterboxBias);
    t.top = Round((s - h) / 2.0 - kLetterboxBias);
  } else {
    const bool right = tile == 1 || tile == 3, bottom = tile == 2 || tile == 3;
    t.left = right ? draw.xc : draw.xc - w;
    t.top = bottom ? draw.yc : draw.yc - h;
  }
  t.canvas_x0 = std::max(t.left, 0);
  t.canvas_y0 = std::max(t.top, 0);
  t.canvas_x1 = std::min(t.left + w, canvas);
  t.canvas_y1 = std::min(t.top + h, canvas);
  const double centre = canvas / 2.0;
  t.sx = draw.scale * w / image_width;
  t.sy = draw.scale * h / image_height;
  t.dx = ToOutput(t.left, centre, draw.scale, draw.tx);
  t.dy = ToOutput(t.top, centre, draw.scale, draw.ty);
  t.ox0 = std::clamp(Round(ToOutput(t.canvas_x0, centre, draw.scale, draw.tx)), 0, s);
  t.ox1 = std::clamp(Round(ToOutput(t.canvas_x1, centre, draw.scale, draw.tx)), 0, s);
  t.oy0 = std::clamp(Round(ToOutput(t.canvas_y0, centre, draw.scale, draw.ty)), 0, s);
  t.oy1 = std::clamp(Round(ToOutput(t.canvas_y1, centre, draw.scale, draw.ty)), 0, s);
  if (t.empty()) return t;
  // The source box whose pixels land on the rectangle. Rounding its edges
  // to whole output pixels may reach past the image by under half an
  // output pixel: kept inside, the tile stretches by that much.
  double x0 = std::clamp((t.ox0 - t.dx) / t.sx, 0.0, double(image_width));
  double x1 = std::clamp((t.ox1 - t.dx) / t.sx, x0, double(image_width));
  double y0 = std::clamp((t.oy0 - t.dy) / t.sy, 0.0, double(image_height));
  double y1 = std::clamp((t.oy1 - t.dy) / t.sy, y0, double(image_height));
  // A sliver under one source pixel (an enlarged image's last column
  // showing by a fraction of an output pixel): its whole pixel, inside.
  auto whole_pixel = [](double& lo, double& hi, int limit) {
    if (hi - lo >= 1) return;
    lo = std::clamp(std::floor(lo), 0.0, limit - 1.0);
    hi = lo + 1;
  };
  whole_pixel(x0, x1, image_width);
  whole_pixel(y0, y1, image_height);
  t.plan = PlanSourceBox(x0, y0, x1 - x0, y1 - y0, t.ox1 - t.ox0, t.oy1 - t.oy0, image_width,
                         image_height);
  return t;
}

std::optional<std::array<float, 4>> MapMosaicBox(const MosaicOptions& options,
                                                 const MosaicDraw& draw, const MosaicTile& tile,
                                                 const std::array<float, 4>& box) {
  const double canvas = CanvasSide(options, draw);
  const double centre = canvas / 2.0;
  // On the canvas (source pixels to the resized image's, then its place),
  // clipped to it. draw.scale > 0: the options keep scale under 1.
  const double rx = tile.sx / draw.scale, ry = tile.sy / draw.scale;
  double c[4] = {box[0] * rx + tile.left, box[1] * ry + tile.top, box[2] * rx + tile.left,
                 box[3] * ry + tile.top};
  for (double& v : c) v = std::clamp(v, 0.0, canvas);
  if (!(c[2] > c[0] && c[3] > c[1])) return std::nullopt;
  // Scaled and moved, clipped to the output.
  const double s = options.size;
  double o[4] = {ToOutput(c[0], centre, draw.scale, draw.tx),
                 ToOutput(c[1], centre, draw.scale, draw.ty),
                 ToOutput(c[2], centre, draw.scale, draw.tx),
                 ToOutput(c[3], centre, draw.scale, draw.ty)};
  for (double& v : o) v = std::clamp(v, 0.0, s);
  const double w1 = (c[2] - c[0]) * draw.scale, h1 = (c[3] - c[1]) * draw.scale;
  const double w2 = o[2] - o[0], h2 = o[3] - o[1];
  const double aspect = std::max(w2 / (h2 + kEps), h2 / (w2 + kEps));
  if (!(w2 > kMinSide && h2 > kMinSide && w2 * h2 / (w1 * h1 + kEps) > kMinAreaRatio &&
        aspect < kMaxAspect)) {
    return std::nullopt;
  }
  return std::array<float, 4>{static_cast<float>(o[0]), static_cast<float>(o[1]),
                              static_cast<float>(o[2]), static_cast<float>(o[3])};
}

}  // namespace feedline::vision
