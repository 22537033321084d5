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
// mirrored tile covers) with kFill: a row at a time, the gaps between the
// tiles that cross it (tiles never overlap).
void FillAroundTiles(std::span<const MosaicTile> tiles, bool mirrored, RgbImageView view) {
  std::array<std::pair<int, int>, 4> spans;
  for (int y = 0; y < view.height; ++y) {
    size_t n = 0;
    for (const MosaicTile& t : tiles) {
      if (t.empty() || y < t.oy0 || y >= t.oy1) continue;
      spans[n++] = mirrored ? std::pair{view.width - t.ox1, view.width - t.ox0}
                            : std::pair{t.ox0, t.ox1};
    }
    // At most 4 spans: by their left edge, in place.
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = i; j > 0 && spans[j].first < spans[j - 1].first; --j) {
        std::swap(spans[j], spans[j - 1]);
      }
    }
    uint8_t* row = view.data + static_cast<size_t>(y) * view.width * 3;
    int x = 0;
    for (size_t i = 0; i <= n; ++i) {
      const int end = i < n ? spans[i].first : view.width;
      if (end > x) std::memset(row + x * 3, kFill, static_cast<size_t>(end - x) * 3);
      if (i < n) x = std::max(x, spans[i].second);
    }
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
  const size_t bytes_needed = static_cast<size_t>(s) * s * 3;
  if (canvas.size() < bytes_needed) canvas.resize(bytes_needed);
  const RgbImageView view{canvas.data(), s, s};
  // The most a tile enlarges the image resized to `size`: decoded to at
  // least that, no tile is drawn from fewer pixels than it shows.
  const int long_side = static_cast<int>(std::ceil(s * (1 + options.scale)));
  std::array<std::shared_ptr<const MosaicImage>, 4> decoded;
  std::array<MosaicTile, 4> tiles;
  for (int k = 0; k < draw.tiles; ++k) {
    const int64_t image = draw.images[k];
    CheckIndex(image, size);  // a partner from a batch sampler's indices
    decoded[k] = cache.Get(image, [&](MosaicImage& made) {
      const std::string name = images.read(image, bytes);
      made.image = pipeline.DecodeForTiles(bytes, name, long_side, made.pixels, ctx);
    });
    const ImageInfo& info = decoded[k]->image.info;
    tiles[k] = PlanMosaicTile(options, draw, k, info.height, info.width);
  }
  // Straight into the output where the pipeline can; else on the canvas.
  std::array<CompositeTile, 4> placed;
  for (int k = 0; k < draw.tiles; ++k) {
    placed[k] = CompositeTile{&decoded[k]->image, decoded[k]->pixels.data(),
                              TilePlacement{tiles[k].plan, tiles[k].ox0, tiles[k].oy0}};
  }
  const std::span<const CompositeTile> drawn(placed.data(), draw.tiles);
  if (!pipeline.DrawComposite(drawn, s, s, kFill, flip, out, "image", ctx)) {
    FillAroundTiles(std::span<const MosaicTile>(tiles.data(), draw.tiles), flip, view);
    for (const CompositeTile& t : drawn) {
      pipeline.DrawTile(*t.image, t.pixels, t.placement, flip, view, ctx);
    }
    pipeline.WriteComposite(view, out, "image", ctx);
  }
  std::vector<ImageObject> kept;
  auto timer = ctx.Time(Stage::kTransform);
  for (int k = 0; k < draw.tiles; ++k) {
    const int64_t image = draw.images[k];
    const MosaicTile& tile = tiles[k];
    const ImageInfo& info = decoded[k]->image.info;
    for (ImageObject& o : images.objects(image, info.height, info.width)) {
      if (!(o.box[2] > o.box[0] && o.box[3] > o.box[1])) continue;
      const std::optional<std::array<float, 4>> box = MapMosaicBox(options, draw, tile, o.box);
      if (!box) continue;
      o.box = *box;
      if (flip) o.box = {s - (*box)[2], (*box)[1], s - (*box)[0], (*box)[3]};
      kept.push_back(o);
    }
  }
  WriteObjectFields(kept, out);
  Tensor shape = out.Allocate("image_size", DType::kI64, Shape{2});
  shape.data<int64_t>()[0] = s;
  shape.data<int64_t>()[1] = s;
}

}  // namespace feedline::vision
