#include "src/vision/mosaic_sample.h"

#include <cstring>
#include <optional>

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
                       int64_t size, const MosaicImages& images, std::vector<uint8_t>& bytes,
                       std::vector<uint8_t>& canvas, Sample& out, SampleContext& ctx) {
  const int s = options.size;
  const MosaicDraw draw = DrawMosaic(options, index, size, ctx.rng());
  // The list's flips, drawn as a plan draws them; the rest of the list
  // draws nothing before decoding (CheckMosaicPipeline).
  const bool flip = pipeline.Plan(s, s, ctx.rng()).flip;
  const size_t bytes_needed = static_cast<size_t>(s) * s * 3;
  if (canvas.size() < bytes_needed) canvas.resize(bytes_needed);
  std::memset(canvas.data(), kFill, bytes_needed);
  const RgbImageView view{canvas.data(), s, s};
  std::vector<ImageObject> kept;
  for (int k = 0; k < draw.tiles; ++k) {
    const int64_t image = draw.images[k];
    const std::string name = images.read(image, bytes);
    MosaicTile tile;
    const ImageInfo info = pipeline.RunTile(
        bytes, name, ctx,
        [&](int height, int width) {
          tile = PlanMosaicTile(options, draw, k, height, width);
          return TilePlacement{tile.plan, tile.ox0, tile.oy0};
        },
        view);
    auto timer = ctx.Time(Stage::kTransform);
    for (ImageObject& o : images.objects(image, info.height, info.width)) {
      if (!(o.box[2] > o.box[0] && o.box[3] > o.box[1])) continue;
      const std::optional<std::array<float, 4>> box = MapMosaicBox(options, draw, tile, o.box);
      if (!box) continue;
      o.box = *box;
      if (flip) o.box = {s - (*box)[2], (*box)[1], s - (*box)[0], (*box)[3]};
      kept.push_back(o);
    }
  }
  pipeline.WriteComposite(view, flip, out, "image", ctx);
  WriteObjectFields(kept, out);
  Tensor shape = out.Allocate("image_size", DType::kI64, Shape{2});
  shape.data<int64_t>()[0] = s;
  shape.data<int64_t>()[1] = s;
}

}  // namespace feedline::vision
