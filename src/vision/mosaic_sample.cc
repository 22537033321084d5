#include "src/vision/mosaic_sample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "src/vision/tile_gaps.h"

namespace feedline::vision {
namespace {

// Ultralytics' canvas and border colour.
constexpr uint8_t kFill = 114;

bool FollowsMosaic(const Transform& t) {
  using Kind = Transform::Kind;
  return t.kind == Kind::kRandomHorizontalFlip || t.IsPixelAugmentation() ||
         t.kind == Kind::kNormalize || t.kind == Kind::kToCHW || t.kind == Kind::kRandomErasing;
}

// Fills the pixels of `view` that no tile covers (mirrored: that no
// mirrored tile covers) with kFill.
void FillAroundTiles(std::span<const MosaicTile> tiles, bool mirrored, RgbImageView view) {
  std::array<internal::TileRect, 4> rects;
  size_t n = 0;
  for (const MosaicTile& t : tiles) {
    if (t.empty()) continue;
    rects[n++] = mirrored ? internal::TileRect{view.width - t.ox1, t.oy0, view.width - t.ox0, t.oy1}
                          : internal::TileRect{t.ox0, t.oy0, t.ox1, t.oy1};
  }
  internal::ForEachGap(std::span<const internal::TileRect>(rects.data(), n), view.width,
                       view.height, [&](int y, int x0, int x1) {
                         uint8_t* row = view.data + static_cast<size_t>(y) * view.width * 3;
                         std::memset(row + x0 * 3, kFill, static_cast<size_t>(x1 - x0) * 3);
                       });
}

// One mosaic of a sample: its draws, its images (decoded, or found in the
// cache) and where each tile goes.
struct PlannedMosaic {
  MosaicDraw draw;
  std::array<std::shared_ptr<const MosaicImage>, 4> decoded;
  std::array<MosaicTile, 4> tiles;
  std::array<CompositeTile, 4> placed;

  std::span<const CompositeTile> drawn() const {
    return std::span<const CompositeTile>(placed.data(), draw.tiles);
  }
};

PlannedMosaic PlanMosaic(const Pipeline& pipeline, const MosaicOptions& options,
                         const MosaicDraw& draw, int64_t size, const MosaicImages& images,
                         MosaicImageCache& cache, std::vector<uint8_t>& bytes,
                         SampleContext& ctx) {
  PlannedMosaic planned;
  planned.draw = draw;
  // The most a tile enlarges the image resized to `size`: decoded to at
  // least that, no tile is drawn from fewer pixels than it shows.
  const int long_side = static_cast<int>(std::ceil(options.size * (1 + options.scale)));
  for (int k = 0; k < draw.tiles; ++k) {
    const int64_t image = draw.images[k];
    CheckIndex(image, size);  // a partner from a batch sampler's indices
    planned.decoded[k] = cache.Get(image, [&](MosaicImage& made) {
      const std::string name = images.read(image, bytes);
      made.image = pipeline.DecodeForTiles(bytes, name, long_side, made.pixels, ctx);
    });
    const ImageInfo& info = planned.decoded[k]->image.info;
    planned.tiles[k] = PlanMosaicTile(options, draw, k, info.height, info.width);
    planned.placed[k] =
        CompositeTile{&planned.decoded[k]->image, planned.decoded[k]->pixels.data(),
                      TilePlacement{planned.tiles[k].plan, planned.tiles[k].ox0,
                                    planned.tiles[k].oy0}};
  }
  return planned;
}

// Draws `mosaic` on `view`, mirrored when `flip`, kFill where no tile shows.
void DrawMosaicOn(const Pipeline& pipeline, const PlannedMosaic& mosaic, bool flip,
                  RgbImageView view, SampleContext& ctx) {
  FillAroundTiles(std::span<const MosaicTile>(mosaic.tiles.data(), mosaic.draw.tiles), flip,
                  view);
  for (const CompositeTile& t : mosaic.drawn()) {
    pipeline.DrawTile(*t.image, t.pixels, t.placement, flip, view, ctx);
  }
}

// `into` x ratio + `other` x (1 - ratio), truncated, as Ultralytics' MixUp
// computes it (in doubles, then astype(uint8)).
void Blend(RgbImageView into, const uint8_t* other, double ratio) {
  const double rest = 1 - ratio;
  const size_t n = static_cast<size_t>(into.width) * into.height * 3;
  for (size_t i = 0; i < n; ++i) {
    into.data[i] = static_cast<uint8_t>(into.data[i] * ratio + other[i] * rest);
  }
}

// Where a kept object came from, for its mask: a tile of a planned mosaic,
// its place among its image's objects and its box there.
struct ObjectSource {
  const PlannedMosaic* mosaic;
  int tile;
  size_t object;
  std::array<float, 4> box;  // source pixels
};

// Appends `mosaic`'s objects as its tiles moved them (and the flip), those
// that stay in the s x s output, and where each came from to `sources`.
void AddObjects(const MosaicOptions& options, const PlannedMosaic& mosaic,
                const MosaicImages& images, bool flip, std::vector<ImageObject>& kept,
                std::vector<ObjectSource>& sources) {
  const int s = options.size;
  for (int k = 0; k < mosaic.draw.tiles; ++k) {
    const int64_t image = mosaic.draw.images[k];
    const ImageInfo& info = mosaic.decoded[k]->image.info;
    std::vector<ImageObject> objects = images.objects(image, info.height, info.width);
    for (size_t i = 0; i < objects.size(); ++i) {
      ImageObject& o = objects[i];
      if (!(o.box[2] > o.box[0] && o.box[3] > o.box[1])) continue;
      const std::optional<std::array<float, 4>> box =
          MapMosaicBox(options, mosaic.draw, mosaic.tiles[k], o.box);
      if (!box) continue;
      sources.push_back(ObjectSource{&mosaic, k, i, o.box});
      o.box = *box;
      if (flip) o.box = {s - (*box)[2], (*box)[1], s - (*box)[0], (*box)[3]};
      kept.push_back(o);
    }
  }
}

// Writes "masks" (uint8 [objects, s, s]): each object's mask drawn through
// its tile's plan at the tile's size, placed where the tile is (mirrored
// with the mosaic), zero elsewhere.
void WriteMasks(int s, std::span<const ObjectSource> sources, const MosaicImages& images,
                bool flip, Sample& out) {
  const int64_t n = static_cast<int64_t>(sources.size());
  Tensor masks = out.Allocate("masks", DType::kU8, Shape{n, s, s});
  if (n == 0) return;  // no buffer
  const size_t plane = static_cast<size_t>(s) * s;
  uint8_t* planes = masks.data<uint8_t>();
  std::memset(planes, 0, plane * static_cast<size_t>(n));
  std::vector<uint8_t> tile;
  for (size_t i = 0; i < sources.size(); ++i) {
    const ObjectSource& source = sources[i];
    const MosaicTile& t = source.mosaic->tiles[source.tile];
    const PlanGeometry geometry(t.plan);
    const int width = t.plan.out_width, height = t.plan.out_height;
    tile.assign(static_cast<size_t>(width) * height, 0);
    images.draw_mask(source.mosaic->draw.images[source.tile], source.object,
                     MosaicImages::MaskTarget{t.plan, geometry, source.box, tile.data()});
    for (int y = 0; y < height; ++y) {
      const uint8_t* from = tile.data() + static_cast<size_t>(y) * width;
      uint8_t* row = planes + plane * i + static_cast<size_t>(t.oy0 + y) * s;
      if (!flip) {
        std::memcpy(row + t.ox0, from, static_cast<size_t>(width));
        continue;
      }
      for (int x = 0; x < width; ++x) row[s - 1 - (t.ox0 + x)] = from[x];
    }
  }
}

// Writes "keypoints" (float32 [objects, K, 3]): each labelled keypoint
// moved as its tile moved its image ((x sx + dx, y sy + dy)), mirrored with
// the mosaic (its place taken as keypoint_flip says); one outside its
// tile's part of the output is not visible there: (0, 0, 0).
void WriteKeypoints(int s, std::span<const ObjectSource> sources, const MosaicImages& images,
                    bool flip, Sample& out) {
  const int64_t n = static_cast<int64_t>(sources.size());
  const int count = images.keypoint_count;
  Tensor field = out.Allocate("keypoints", DType::kF32, Shape{n, count, 3});
  if (n == 0 || count == 0) return;  // no buffer
  for (size_t i = 0; i < sources.size(); ++i) {
    const ObjectSource& source = sources[i];
    const MosaicTile& t = source.mosaic->tiles[source.tile];
    const MapKeypoint map = [&](double x, double y) -> std::optional<std::array<double, 2>> {
      const double u = x * t.sx + t.dx, v = y * t.sy + t.dy;
      if (!(u >= t.ox0 && u <= t.ox1 && v >= t.oy0 && v <= t.oy1)) return std::nullopt;
      return std::array<double, 2>{flip ? s - u : u, v};
    };
    WriteKeypointRow(images.keypoints(source.mosaic->draw.images[source.tile], source.object),
                     count, images.keypoint_flip, flip, map,
                     field.data<float>() + i * static_cast<size_t>(count) * 3);
  }
}

}  // namespace

void CheckMosaicPipeline(const Pipeline& pipeline, const MosaicOptions& options,
                         const std::string& dataset) {
  const int64_t pixels = int64_t{options.size} * options.size;
  if (pixels > pipeline.options().decode.max_pixels) {
    throw Error(dataset + ": a mosaic of size " + std::to_string(options.size) + " makes " +
                std::to_string(pixels) + " pixels, over max_pixels " +
                std::to_string(pipeline.options().decode.max_pixels));
  }
  for (const Transform& t : pipeline.transforms()) {
    if (FollowsMosaic(t)) continue;
    throw Error(dataset + ": " + t.ToString() +
                " cannot follow a mosaic, which makes the size x size output itself: with "
                "mosaic, list only RandomHorizontalFlip, colour steps (ColorJitter, "
                "RandomPhotometricDistort), RandomErasing and the output's dtype and layout");
  }
}

void WriteMosaicSample(const Pipeline& pipeline, const MosaicOptions& options, int64_t index,
                       int64_t size, const MosaicImages& images, MosaicImageCache& cache,
                       std::vector<uint8_t>& bytes, std::vector<uint8_t>& canvas, Sample& out,
                       SampleContext& ctx) {
  const int s = options.size;
  const MosaicDraw draw = DrawMosaic(options, index, ctx.batch(), size, ctx.rng());
  // The list's flips, drawn as a plan draws them; the rest of the list
  // draws nothing before decoding (CheckMosaicPipeline).
  const bool flip = pipeline.Plan(s, s, ctx.rng()).flip;
  // The mixup's draws come from a stream of their own: with or without it,
  // the sample's other draws are the same.
  MixupDraw mixup;
  std::optional<MosaicDraw> partner_draw;
  if (options.mixup > 0) {
    Rng rng(ctx.seed(), static_cast<uint64_t>(ctx.epoch()), static_cast<uint64_t>(index),
            kMixupStream);
    mixup = DrawMixup(options, ctx.batch(), size, rng);
    if (mixup.mixed) partner_draw = DrawMosaic(options, mixup.partner, ctx.batch(), size, rng);
  }
  const PlannedMosaic own = PlanMosaic(pipeline, options, draw, size, images, cache, bytes, ctx);
  std::optional<PlannedMosaic> partner;
  if (partner_draw) {
    partner = PlanMosaic(pipeline, options, *partner_draw, size, images, cache, bytes, ctx);
  }
  const size_t bytes_needed = static_cast<size_t>(s) * s * 3;
  const size_t canvases = partner ? 2 : 1;
  if (canvas.size() < canvases * bytes_needed) canvas.resize(canvases * bytes_needed);
  const RgbImageView view{canvas.data(), s, s};
  if (partner) {
    // Both drawn whole, then blended: the pipeline's last steps see the blend.
    const RgbImageView other{canvas.data() + bytes_needed, s, s};
    DrawMosaicOn(pipeline, own, flip, view, ctx);
    DrawMosaicOn(pipeline, *partner, flip, other, ctx);
    {
      auto timer = ctx.Time(Stage::kTransform);
      Blend(view, other.data, mixup.ratio);
    }
    pipeline.WriteComposite(view, out, "image", ctx);
  } else if (!pipeline.DrawComposite(own.drawn(), s, s, kFill, flip, out, "image", ctx)) {
    // Straight into the output where the pipeline can; else on the canvas.
    DrawMosaicOn(pipeline, own, flip, view, ctx);
    pipeline.WriteComposite(view, out, "image", ctx);
  }
  std::vector<ImageObject> kept;
  std::vector<ObjectSource> sources;
  auto timer = ctx.Time(Stage::kTransform);
  AddObjects(options, own, images, flip, kept, sources);
  if (partner) AddObjects(options, *partner, images, flip, kept, sources);
  WriteObjectFields(kept, out);
  if (images.draw_mask) WriteMasks(s, sources, images, flip, out);
  if (images.keypoints) WriteKeypoints(s, sources, images, flip, out);
  Tensor shape = out.Allocate("image_size", DType::kI64, Shape{2});
  shape.data<int64_t>()[0] = s;
  shape.data<int64_t>()[1] = s;
}

}  // namespace feedline::vision
