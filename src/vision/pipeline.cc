#include "feedline/vision/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>


#include "feedline/error.h"
#include "feedline/vision/iou_crop.h"
#include "src/vision/augment.h"
#include "src/vision/decoders.h"
#include "src/vision/opencv.h"
#include "src/vision/resample.h"
#include "src/vision/resize_linear.h"
#include "src/vision/tile_gaps.h"
#include "src/vision/write_output.h"

namespace feedline::vision {
namespace {

using Kind = Transform::Kind;

// OpenCV would otherwise spread each resize over its own thread pool, which
// fights the loader's workers for the same cores.
void LimitOpenCvThreads() {
  static std::once_flag once;
  std::call_once(once, [] { cv::setNumThreads(1); });
}

// torchvision's center_crop offset along one axis of length `size` for a
// crop of `crop`, in the unpadded image's coordinates: negative when the
// crop is larger and the image gets zero padding.
int CenterOffset(int size, int crop) {
  if (crop > size) return -((crop - size) / 2);
  return static_cast<int>(std::nearbyint((size - crop) / 2.0));
}

int Round(double value) { return static_cast<int>(std::floor(value + 0.5)); }

// The filter for shrinking by fx x fy decoded pixels per output pixel. For
// kBilinear, area averaging takes over at 2x and beyond, as antialiasing;
// after DCT scaling the remaining factor is mostly below 2, the scaled IDCT
// having done the averaging.
internal::Filter FilterFor(Interpolation interpolation, double fx, double fy) {
  const bool shrinking = fx >= 1.0 && fy >= 1.0;
  switch (interpolation) {
    case Interpolation::kNearest:
      return internal::Filter::kNearest;
    case Interpolation::kArea:
      return shrinking ? internal::Filter::kArea : internal::Filter::kLinear;
    case Interpolation::kBilinear:
      return shrinking && std::max(fx, fy) >= 2.0 ? internal::Filter::kArea
                                                  : internal::Filter::kLinear;
  }
  return internal::Filter::kLinear;
}

// Image coordinate `v` in decoded pixels of scale `s`, origin `origin`.
// The image's last edge maps to the last decoded pixel's edge: libjpeg
// rounds a partial block up to a whole decoded pixel.
double ToDecoded(double v, int s, int image_size, int origin) {
  if (v == image_size) return (image_size + s - 1) / s - origin;
  return v / s - origin;
}

// The plan's box in decoded pixels: the part of it that lies on decoded
// pixels (vx0..vx1, vy0..vy1) and, when the rest is padding, the output
// rectangle the pixels land in (ox0..ox1, oy0..oy1).
struct DecodedBox {
  double bx, by, bw, bh;
  double vx0, vx1, vy0, vy1;
  bool padded = false;
  int ox0 = 0, ox1 = 0, oy0 = 0, oy1 = 0;
};

DecodedBox FindDecodedBox(const PipelinePlan& plan, const DecodedImage& image) {
  const int ow = plan.out_width;
  const int oh = plan.out_height;
  const int s = image.scale;
  DecodedBox box;
  box.bx = ToDecoded(plan.x, s, image.info.width, image.x);
  box.by = ToDecoded(plan.y, s, image.info.height, image.y);
  box.bw = ToDecoded(plan.x + plan.width, s, image.info.width, image.x) - box.bx;
  box.bh = ToDecoded(plan.y + plan.height, s, image.info.height, image.y) - box.by;
  box.vx0 = std::max(box.bx, 0.0);
  box.vx1 = std::min(box.bx + box.bw, double(image.width));
  box.vy0 = std::max(box.by, 0.0);
  box.vy1 = std::min(box.by + box.bh, double(image.height));
  box.ox1 = ow;
  box.oy1 = oh;
  box.padded = box.vx0 > box.bx + 1e-6 || box.vx1 < box.bx + box.bw - 1e-6 ||
               box.vy0 > box.by + 1e-6 || box.vy1 < box.by + box.bh - 1e-6;
  if (box.padded) {
    box.ox0 = std::clamp(Round((box.vx0 - box.bx) * ow / box.bw), 0, ow);
    box.ox1 = std::clamp(Round((box.vx1 - box.bx) * ow / box.bw), box.ox0, ow);
    box.oy0 = std::clamp(Round((box.vy0 - box.by) * oh / box.bh), 0, oh);
    box.oy1 = std::clamp(Round((box.vy1 - box.by) * oh / box.bh), box.oy0, oh);
  }
  return box;
}

// Resamples the plan's box from the decoded pixels into `dst`
// (plan.out_height rows of plan.out_width * 3 bytes).
void Resample(const PipelinePlan& plan, const DecodedImage& image, const DecodedBox& box,
              const uint8_t* pixels, uint8_t* dst, std::vector<uint8_t>& buffer,
              size_t stride = 0) {
  const int ow = plan.out_width;
  const int oh = plan.out_height;
  if (stride == 0) stride = static_cast<size_t>(ow) * 3;
  if (box.padded) {
    for (int y = 0; y < oh; ++y) {
      uint8_t* row = dst + y * stride;
      if (plan.fill[0] == plan.fill[1] && plan.fill[1] == plan.fill[2]) {
        std::memset(row, plan.fill[0], static_cast<size_t>(ow) * 3);
      } else {
        for (int x = 0; x < ow; ++x) std::memcpy(row + x * 3, plan.fill.data(), 3);
      }
    }
    if (box.ox1 == box.ox0 || box.oy1 == box.oy0 || box.vx1 - box.vx0 < 0.5 ||
        box.vy1 - box.vy0 < 0.5) {
      return;  // all padding
    }
  }
  const internal::RgbImage src{pixels, image.width, image.height};
  const internal::Filter filter = FilterFor(plan.interpolation, box.bw / ow, box.bh / oh);
  internal::ResampleBox(src, box.vx0, box.vy0, box.vx1 - box.vx0, box.vy1 - box.vy0,
                        dst + box.oy0 * stride + static_cast<size_t>(box.ox0) * 3,
                        box.ox1 - box.ox0, box.oy1 - box.oy0, stride, filter, buffer);
}

// The whole-pixel box of the fused bilinear resize, if this job can take it:
// no padding, a bilinear filter and a CPU with the vector path.
std::optional<internal::PixelBox> FusedLinearBox(const PipelinePlan& plan,
                                                 const DecodedImage& image, const DecodedBox& box,
                                                 const uint8_t* pixels) {
  if (box.padded || !internal::LinearResizeIsVectorized()) return std::nullopt;
  if (FilterFor(plan.interpolation, box.bw / plan.out_width, box.bh / plan.out_height) !=
      internal::Filter::kLinear) {
    return std::nullopt;
  }
  const internal::RgbImage src{pixels, image.width, image.height};
  return internal::WholePixels(src, box.vx0, box.vy0, box.vx1 - box.vx0, box.vy1 - box.vy0);
}

// Sets plan's source box from (bx, by, bw, bh) in image pixels: the
// largest DCT scale that still covers the output, and the box snapped to
// whole pixels of that scale. The plan's output and image sizes and
// interpolation are set.
void FinishPlan(double bx, double by, double bw, double bh, PipelinePlan& plan) {
  // The largest DCT scale whose decoded box still covers the output.
  // Nearest-neighbour output must show real pixels, not DCT averages.
  if (plan.interpolation != Interpolation::kNearest) {
    while (plan.max_scale < 8 && bw / (2 * plan.max_scale) >= plan.out_width &&
           bh / (2 * plan.max_scale) >= plan.out_height) {
      plan.max_scale *= 2;
    }
  }
  // Snap the box to whole pixels of that scale (each edge moves by at most
  // max_scale / 2 image pixels, under half an output pixel), so that it is
  // whole in decoded pixels and the resampler needs no sub-pixel offset.
  // Edges inside the image stay inside.
  const double s = plan.max_scale;
  const int width = plan.image_width, height = plan.image_height;
  auto snap = [s](double v, int limit) {
    // The image's own far edge is whole in decoded pixels already (a
    // partial block decodes to a whole pixel): kept, so that a resize of
    // the whole image keeps its last rows and the objects' scale is
    // exactly the sizes' ratio.
    if (v == limit) return v;
    double snapped = std::nearbyint(v / s) * s;
    if (v >= 0 && snapped < 0) snapped = 0;
    if (v <= limit && snapped > limit) snapped = limit;
    return snapped;
  };
  const double x0 = snap(bx, width), x1 = snap(bx + bw, width);
  const double y0 = snap(by, height), y1 = snap(by + bh, height);
  plan.x = x0;
  plan.y = y0;
  plan.width = std::max(x1 - x0, 1.0);
  plan.height = std::max(y1 - y0, 1.0);
}

bool IsGeometric(Kind kind) {
  return kind == Kind::kResize || kind == Kind::kCenterCrop || kind == Kind::kRandomResizedCrop ||
         kind == Kind::kRandomHorizontalFlip || kind == Kind::kRandomZoomOut ||
         kind == Kind::kRandomIoUCrop || kind == Kind::kRandomShortestSize ||
         kind == Kind::kScaleJitter || kind == Kind::kFixedSizeCrop;
}

// A side scaled by r, truncated to whole pixels as the references' int()
// does, and at least 1.
int ScaledSide(int side, double r) {
  return static_cast<int>(std::clamp(std::floor(side * r), 1.0, double{INT32_MAX}));
}

// The output's pixels, values and layout, straight from the decoded pixels:
// the path without pixel augmentations.
void WriteImage(const PipelinePlan& plan, const DecodedImage& image, const DecodedBox& box,
                const uint8_t* decoded, DType dtype, bool chw, const internal::ValueMap& values,
                const Tensor& dst, std::vector<uint8_t>& resampled, std::vector<uint8_t>& buffer) {
  const int ow = plan.out_width;
  const int oh = plan.out_height;
  if (const std::optional<internal::PixelBox> whole = FusedLinearBox(plan, image, box, decoded)) {
    // Decoded pixels to the output values in one pass.
    const internal::RgbImage src{decoded, image.width, image.height};
    const internal::OutputFormat format{dtype, chw, plan.flip, &values};
    internal::ResizeLinearInto(src, whole->x, whole->y, whole->width, whole->height, ow, oh,
                               format, dst.raw(), buffer);
    return;
  }
  if (dtype == DType::kU8 && !chw) {
    // Nothing to convert: resample straight into the destination.
    uint8_t* pixels = dst.data<uint8_t>();
    Resample(plan, image, box, decoded, pixels, buffer);
    if (plan.flip) {
      cv::Mat mat(oh, ow, CV_8UC3, pixels);
      cv::flip(mat, mat, /*flipCode=*/1);
    }
    return;
  }
  resampled.resize(static_cast<size_t>(ow) * oh * 3);
  Resample(plan, image, box, decoded, resampled.data(), buffer);
  internal::WriteOutput(resampled.data(), ow, oh, plan.flip, chw, dtype, values, dst.raw());
}

// The path with pixel augmentations: the resampled (and flipped) image as
// uint8 RGB in `resampled`, the augmentations from transforms[first_late]
// on in list order, then the value mapping and layout. `decoded` is spent by then and becomes their scratch.
void WriteAugmentedImage(const PipelinePlan& plan, const DecodedImage& image,
                         const DecodedBox& box, std::vector<uint8_t>& decoded,
                         const std::vector<Transform>& transforms, size_t first_late,
                         DType dtype, bool chw,
                         const internal::ValueMap& values, const Tensor& dst, Rng& rng,
                         std::vector<uint8_t>& resampled, std::vector<uint8_t>& buffer) {
  const int ow = plan.out_width;
  const int oh = plan.out_height;
  resampled.resize(static_cast<size_t>(ow) * oh * 3);
  if (const std::optional<internal::PixelBox> whole =
          FusedLinearBox(plan, image, box, decoded.data())) {
    // The same kernel, and so the same pixels, as the path without
    // augmentations.
    const internal::RgbImage src{decoded.data(), image.width, image.height};
    const internal::OutputFormat format{DType::kU8, /*chw=*/false, plan.flip, &values};
    internal::ResizeLinearInto(src, whole->x, whole->y, whole->width, whole->height, ow, oh,
                               format, resampled.data(), buffer);
  } else {
    Resample(plan, image, box, decoded.data(), resampled.data(), buffer);
    if (plan.flip) {
      cv::Mat mat(oh, ow, CV_8UC3, resampled.data());
      cv::flip(mat, mat, /*flipCode=*/1);
    }
  }
  const RgbImageView view{resampled.data(), oh, ow};
  for (size_t i = first_late; i < transforms.size(); ++i) {
    const Transform& t = transforms[i];
    if (t.IsPixelAugmentation()) internal::ApplyPixelAugmentation(t, view, rng, decoded);
  }
  if (dtype == DType::kU8 && !chw) {
    std::memcpy(dst.raw(), resampled.data(), resampled.size());
  } else {
    internal::WriteOutput(resampled.data(), ow, oh, /*flip=*/false, chw, dtype, values, dst.raw());
  }
}

}  // namespace

Pipeline::Pipeline(std::vector<Transform> transforms, PipelineOptions options)
    : transforms_(std::move(transforms)), options_(options) {
  LimitOpenCvThreads();
  const Transform* normalize = nullptr;
  int to_chw = 0;
  for (const Transform& t : transforms_) {
    t.Validate();
    if (t.kind == Kind::kNormalize) {
      if (normalize != nullptr) throw Error("pipeline: Normalize is listed twice");
      normalize = &t;
    }
    if (t.kind == Kind::kToCHW) ++to_chw;
  }
  if (to_chw > 1) throw Error("pipeline: ToCHW is listed twice");
  chw_ = to_chw == 1;
  // The geometric steps are folded into one plan drawn before decoding, the
  // pixel augmentations run on the uint8 image after them, and RandomErasing
  // on the output tensor: the list must have that order for the random
  // draws, and the result, to be torchvision's.
  // A RandomPhotometricDistort before the first geometric step runs on the
  // whole decoded image (early_augmentations_), as the references run it on
  // the image before their crops; one between geometric steps would see
  // what no plan makes (a canvas, a crop's mean) and is refused below as
  // ColorJitter is.
  // Without a geometric step the output is the whole image: every pixel
  // augmentation runs on it, in list order.
  first_late_ = 0;
  for (size_t i = 0; i < transforms_.size(); ++i) {
    if (IsGeometric(transforms_[i].kind)) {
      first_late_ = i;
      break;
    }
  }
  const Transform* augmentation = nullptr;
  const Transform* erasing = nullptr;
  const Transform* normalized = nullptr;
  const Transform* iou_crop = nullptr;
  const Transform* padding = nullptr;  // the first step that pads, with its fill
  for (size_t i = 0; i < transforms_.size(); ++i) {
    const Transform& t = transforms_[i];
    if (t.kind == Kind::kRandomPhotometricDistort && i < first_late_) {
      if (erasing != nullptr || normalized != nullptr) {
        throw Error("pipeline: " + t.ToString() + " comes after " +
                    (erasing != nullptr ? erasing : normalized)->ToString() +
                    "; it works on the uint8 image, so list it before normalize and "
                    "random_erasing");
      }
      early_augmentations_.push_back(i);
      continue;
    }
    if (t.kind == Kind::kRandomIoUCrop) {
      // Which objects a second crop keeps would depend on the boxes the
      // first one clamped, which the plan does not keep.
      if (iou_crop != nullptr) throw Error("pipeline: random_iou_crop is listed twice");
      iou_crop = &t;
    }
    if (t.kind == Kind::kCenterCrop || t.kind == Kind::kRandomZoomOut ||
        t.kind == Kind::kFixedSizeCrop) {
      // A plan pads with one colour (CenterCrop's is black).
      const std::array<float, 3> fill =
          t.kind == Kind::kCenterCrop ? std::array<float, 3>{0, 0, 0} : t.fill;
      const std::array<float, 3> first = padding == nullptr || padding->kind == Kind::kCenterCrop
                                             ? std::array<float, 3>{0, 0, 0}
                                             : padding->fill;
      if (padding != nullptr && fill != first) {
        throw Error("pipeline: " + padding->ToString() + " and " + t.ToString() +
                    " pad with different colours, and a pipeline pads with one");
      }
      if (padding == nullptr) padding = &t;
    }
    const Transform* after = erasing != nullptr ? erasing : augmentation;
    if (IsGeometric(t.kind) && after != nullptr) {
      throw Error("pipeline: " + t.ToString() + " comes after " + after->ToString() +
                  "; list the geometric steps (resize, crops, flips) first: they are folded "
                  "into the decode");
    }
    if (t.IsPixelAugmentation()) {
      if (erasing != nullptr || normalized != nullptr) {
        throw Error("pipeline: " + t.ToString() + " comes after " +
                    (erasing != nullptr ? erasing : normalized)->ToString() +
                    "; it works on the uint8 image, so list it before normalize and "
                    "random_erasing");
      }
      augmentation = &t;
      pixel_augmentations_ = true;
    }
    if (t.kind == Kind::kNormalize) normalized = &t;
    if (t.kind == Kind::kRandomErasing) {
      erasing = &t;
      ErasingNormalization values;
      // Listed before Normalize: its values are normalized with the image.
      if (normalize != nullptr && normalized == nullptr) {
        values.mean = normalize->mean;
        values.std = normalize->std;
      }
      erasing_.emplace_back(i, values);
    }
  }
  const DType dtype = options_.dtype;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kU8) {
    throw Error(std::string("pipeline: the output dtype must be f32, f16 or u8, got ") +
                DTypeName(dtype));
  }
  if (dtype == DType::kU8 && erasing != nullptr) {
    throw Error(
        "pipeline: random_erasing needs a float output (f32 or f16), as torchvision's "
        "RandomErasing follows ToTensor");
  }
  if (dtype == DType::kU8 && normalize != nullptr) {
    throw Error(
        "pipeline: Normalize needs a float output (f32 or f16); with u8 output, normalize "
        "on the accelerator");
  }
  if (options_.decode.max_pixels <= 0) {
    throw Error("pipeline: max_pixels must be > 0, got " +
                std::to_string(options_.decode.max_pixels));
  }
  // An output larger than the largest image the decoder accepts is a typo
  // (CenterCrop(100000) is 30 GB per image): refused here, not as an
  // allocation failure in every worker. Only the last geometric step sizes
  // the output; the earlier ones are folded into it, never materialized.
  const Transform* last_sized = nullptr;
  for (const Transform& t : transforms_) {
    if (t.kind == Kind::kCenterCrop || t.kind == Kind::kRandomResizedCrop ||
        t.kind == Kind::kResize || t.kind == Kind::kFixedSizeCrop) {
      last_sized = &t;
    }
  }
  if (last_sized != nullptr) {
    const Transform& t = *last_sized;
    // A one-sided Resize makes at least size x size pixels (a square image).
    const int64_t width = t.kind == Kind::kResize && t.width == 0 ? t.height : t.width;
    const int64_t pixels = int64_t{t.height} * width;
    if (pixels > options_.decode.max_pixels) {
      throw Error("pipeline: " + t.ToString() + " makes images of " + std::to_string(pixels) +
                  " pixels or more, over max_pixels " + std::to_string(options_.decode.max_pixels) +
                  " (the decoder's limit; raise max_pixels to allow it)");
    }
  }
  values_ = std::make_shared<const internal::ValueMap>(
      internal::MakeValueMap(normalize != nullptr ? &normalize->mean : nullptr,
                             normalize != nullptr ? &normalize->std : nullptr));
}

std::optional<Shape> Pipeline::FixedShape() const {
  std::optional<std::array<int64_t, 2>> size;
  for (const Transform& t : transforms_) {
    if (t.kind == Kind::kCenterCrop || t.kind == Kind::kRandomResizedCrop ||
        t.kind == Kind::kFixedSizeCrop || (t.kind == Kind::kResize && t.width != 0)) {
      size = std::array<int64_t, 2>{t.height, t.width};
    } else if (t.kind == Kind::kResize || t.IsDetectionGeometry()) {
      size.reset();
    }
  }
  if (!size) return std::nullopt;
  return chw_ ? Shape{3, (*size)[0], (*size)[1]} : Shape{(*size)[0], (*size)[1], 3};
}

Shape Pipeline::OutputShape(int height, int width) const {
  int h = height, w = width;
  for (const Transform& t : transforms_) {
    if (t.IsDetectionGeometry()) {
      throw Error("pipeline: the output size of " + t.ToString() +
                  " varies with its draws; Plan gives an image's");
    }
    if (t.kind == Kind::kFixedSizeCrop) {
      h = t.height;
      w = t.width;
    } else if (t.kind == Kind::kResize) {
      const std::array<int, 2> size = ResizedSize(t, h, w);
      h = size[0];
      w = size[1];
    } else if (t.kind == Kind::kCenterCrop || t.kind == Kind::kRandomResizedCrop) {
      h = t.height;
      w = t.width;
    }
  }
  return chw_ ? Shape{3, h, w} : Shape{h, w, 3};
}

PipelinePlan Pipeline::Plan(int height, int width, Rng& rng, PlanBoxes boxes) const {
  // The image as transformed so far: `cw` x `ch` pixels showing the source
  // box (bx, by, bw, bh), mirrored when `flip`.
  double bx = 0, by = 0, bw = width, bh = height;
  int cw = width, ch = height;
  bool flip = false;
  Interpolation interpolation = Interpolation::kBilinear;
  std::array<uint8_t, 3> fill = {0, 0, 0};
  std::vector<uint8_t> kept_boxes;
  // The objects' boxes with a width and a height in the current image's
  // pixels (RandomIoUCrop's input), and the index in `boxes` of each.
  std::vector<std::array<double, 4>> current;
  std::vector<size_t> current_index;
  auto current_boxes = [&]() -> std::span<const std::array<double, 4>> {
    current.clear();
    current_index.clear();
    const double fx = boxes.normalized ? width : 1.0, fy = boxes.normalized ? height : 1.0;
    for (size_t i = 0; i < boxes.boxes.size(); ++i) {
      const std::array<float, 4>& b = boxes.boxes[i];
      // In float, as the datasets clamp their objects.
      const float sx0 = std::clamp(static_cast<float>(b[0] * fx), 0.0f, float(width));
      const float sy0 = std::clamp(static_cast<float>(b[1] * fy), 0.0f, float(height));
      const float sx1 = std::clamp(static_cast<float>(b[2] * fx), 0.0f, float(width));
      const float sy1 = std::clamp(static_cast<float>(b[3] * fy), 0.0f, float(height));
      if (!(sx1 > sx0 && sy1 > sy0)) continue;
      double x0 = (sx0 - bx) * cw / bw, x1 = (sx1 - bx) * cw / bw;
      const double y0 = (sy0 - by) * ch / bh, y1 = (sy1 - by) * ch / bh;
      if (flip) {
        const double mirrored0 = cw - x1;
        x1 = cw - x0;
        x0 = mirrored0;
      }
      current.push_back({x0, y0, x1, y1});
      current_index.push_back(i);
    }
    return current;
  };
  // Keeps the window [left, left + w) x [top, top + h) of the current image.
  auto crop = [&](int top, int left, int h, int w) {
    const double sx = bw / cw, sy = bh / ch;
    const int source_left = flip ? cw - (left + w) : left;
    bx += source_left * sx;
    by += top * sy;
    bw = w * sx;
    bh = h * sy;
    cw = w;
    ch = h;
  };
  for (const Transform& t : transforms_) {
    switch (t.kind) {
      case Kind::kResize: {
        const std::array<int, 2> size = ResizedSize(t, ch, cw);
        ch = size[0];
        cw = size[1];
        interpolation = t.interpolation;
        break;
      }
      case Kind::kCenterCrop:
        crop(CenterOffset(ch, t.height), CenterOffset(cw, t.width), t.height, t.width);
        break;
      case Kind::kRandomResizedCrop: {
        const CropBox box = RandomResizedCropBox(ch, cw, t.scale, t.ratio, rng);
        crop(box.top, box.left, box.height, box.width);
        ch = t.height;
        cw = t.width;
        interpolation = t.interpolation;
        break;
      }
      case Kind::kRandomHorizontalFlip:
        if (rng.Bernoulli(t.p)) flip = !flip;
        break;
      case Kind::kRandomZoomOut: {
        // The references' draws: the coin, the side factor, the offsets.
        if (!rng.Bernoulli(t.p)) break;
        const double side = rng.Uniform(t.side_range[0], t.side_range[1]);
        // Clamped to an int (a sliver resized to INT32_MAX; Run refuses
        // such an output by its pixel count).
        const int canvas_w = static_cast<int>(std::min(std::floor(cw * side), double{INT32_MAX}));
        const int canvas_h = static_cast<int>(std::min(std::floor(ch * side), double{INT32_MAX}));
        const int left = static_cast<int>((canvas_w - cw) * rng.Uniform());
        const int top = static_cast<int>((canvas_h - ch) * rng.Uniform());
        crop(-top, -left, canvas_h, canvas_w);
        for (int c = 0; c < 3; ++c) fill[c] = static_cast<uint8_t>(t.fill[c]);
        break;
      }
      case Kind::kRandomIoUCrop:
        if (const std::optional<CropBox> box = RandomIoUCropBox(ch, cw, current_boxes(), t, rng)) {
          // The references' test, on the boxes the crop was chosen from:
          // decided here once, so that the objects written are those.
          kept_boxes.assign(boxes.boxes.size(), 0);
          for (size_t k = 0; k < current.size(); ++k) {
            kept_boxes[current_index[k]] = CentredIn(current[k], *box);
          }
          crop(box->top, box->left, box->height, box->width);
        }
        break;
      case Kind::kRandomShortestSize: {
        const int size = t.sizes[rng.UniformInt(static_cast<uint64_t>(t.sizes.size()))];
        const double r = std::min(static_cast<double>(size) / std::min(ch, cw),
                                  static_cast<double>(t.max_size) / std::max(ch, cw));
        cw = ScaledSide(cw, r);
        ch = ScaledSide(ch, r);
        interpolation = t.interpolation;
        break;
      }
      case Kind::kScaleJitter: {
        // The references pair target_size[1] with the height: kept.
        const double r = std::min(static_cast<double>(t.width) / ch,
                                  static_cast<double>(t.height) / cw) *
                         rng.Uniform(t.scale[0], t.scale[1]);
        cw = ScaledSide(cw, r);
        ch = ScaledSide(ch, r);
        interpolation = t.interpolation;
        break;
      }
      case Kind::kFixedSizeCrop: {
        const int new_h = std::min(ch, t.height), new_w = std::min(cw, t.width);
        if (new_h != ch || new_w != cw) {
          const double r = rng.Uniform();  // one draw for both offsets, as theirs
          const int top = static_cast<int>(std::max(ch - t.height, 0) * r);
          const int left = static_cast<int>(std::max(cw - t.width, 0) * r);
          crop(top, left, new_h, new_w);
        }
        if (new_h != t.height || new_w != t.width) {  // padded at the right and bottom
          crop(0, 0, t.height, t.width);
          for (int c = 0; c < 3; ++c) fill[c] = static_cast<uint8_t>(t.fill[c]);
        }
        break;
      }
      case Kind::kRandomPhotometricDistort:
      case Kind::kRandomHSV:
      case Kind::kNormalize:
      case Kind::kToCHW:
      case Kind::kColorJitter:
      case Kind::kTrivialAugmentWide:
      case Kind::kRandAugment:
      case Kind::kAutoAugment:
      case Kind::kRandomErasing:
        break;  // drawn after decoding, in Run
    }
  }
  PipelinePlan plan;
  plan.out_width = cw;
  plan.out_height = ch;
  plan.flip = flip;
  plan.interpolation = interpolation;
  plan.image_height = height;
  plan.image_width = width;
  plan.fill = fill;
  plan.kept_boxes = std::move(kept_boxes);
  FinishPlan(bx, by, bw, bh, plan);
  return plan;
}

void Pipeline::Run(std::span<const uint8_t> data, std::string_view source, Sample& out,
                   std::string_view field, SampleContext& ctx,
                   std::span<const uint32_t> jpeg_restarts, PipelinePlan* plan_used,
                   PlanBoxes boxes) const {
  std::vector<uint8_t>& decoded = ctx.scratch(kDecodedSlot);
  std::vector<uint8_t>& resampled = ctx.scratch(kResampledSlot);
  std::vector<uint8_t>& buffer = ctx.scratch(kWorkSlot);
  // The plan is drawn inside the decoder, once it has read the header.
  struct Planning {
    const Pipeline* pipeline;
    Rng* rng;
    std::span<const uint32_t> jpeg_restarts;
    PlanBoxes boxes;
    PipelinePlan plan;
  } planning{this, &ctx.rng(), jpeg_restarts, boxes, {}};
  internal::RequestSource requests;
  requests.grow_only = true;
  requests.context = &planning;
  requests.planner = [](const ImageInfo& info, void* context) {
    Planning& p = *static_cast<Planning*>(context);
    p.plan = p.pipeline->Plan(info.height, info.width, *p.rng, p.boxes);
    DecodeRequest request;
    request.jpeg_restarts = p.jpeg_restarts;
    // Augmentations before the geometric steps see the whole image.
    if (p.pipeline->options().fused && p.pipeline->early_augmentations_.empty()) {
      const PipelinePlan& plan = p.plan;
      const int x0 = static_cast<int>(std::floor(std::max(plan.x, 0.0)));
      const int y0 = static_cast<int>(std::floor(std::max(plan.y, 0.0)));
      const int x1 = static_cast<int>(std::ceil(std::min(plan.x + plan.width, 1.0 * info.width)));
      const int y1 = static_cast<int>(std::ceil(std::min(plan.y + plan.height, 1.0 * info.height)));
      request.region = Rect{x0, y0, x1 - x0, y1 - y0};
      request.max_scale = plan.max_scale;
    }
    return request;
  };
  DecodedImage image;
  {
    auto timer = ctx.Time(Stage::kDecode);
    image = internal::DecodePlanned(data, source, decoded, requests, options_.decode);
  }
  ctx.CountImagesDecoded();
  const PipelinePlan& plan = planning.plan;
  if (plan_used != nullptr) *plan_used = plan;
  if (!early_augmentations_.empty()) {
    auto timer = ctx.Time(Stage::kTransform);
    const RgbImageView whole{decoded.data(), image.height, image.width};
    for (size_t index : early_augmentations_) {
      internal::ApplyPixelAugmentation(transforms_[index], whole, ctx.rng(), buffer);
    }
  }

  auto timer = ctx.Time(Stage::kTransform);
  const int ow = plan.out_width;
  const int oh = plan.out_height;
  // A one-sided Resize of a sliver (1 x 80000 to 256 x 20480000) has an
  // output the constructor could not foresee.
  if (int64_t{ow} * oh > options_.decode.max_pixels) {
    throw SampleError(FailureKind::kTooLarge, std::string(source),
                      "the transforms make a " + std::to_string(ow) + "x" + std::to_string(oh) +
                          " image from a " + std::to_string(image.info.width) + "x" +
                          std::to_string(image.info.height) + " one, over max_pixels " +
                          std::to_string(options_.decode.max_pixels));
  }
  const Shape shape = chw_ ? Shape{3, oh, ow} : Shape{oh, ow, 3};
  Tensor dst = out.Allocate(field, options_.dtype, shape);
  const DecodedBox box = FindDecodedBox(plan, image);
  if (!pixel_augmentations_) {
    WriteImage(plan, image, box, decoded.data(), options_.dtype, chw_, *values_, dst, resampled,
               buffer);
  } else {
    WriteAugmentedImage(plan, image, box, decoded, transforms_, first_late_, options_.dtype, chw_,
                        *values_, dst, ctx.rng(), resampled, buffer);
  }
  if (!erasing_.empty()) {
    // value="random" draws its noise into this per-thread buffer, reused.
    thread_local std::vector<float> noise;
    for (const auto& [index, normalization] : erasing_) {
      internal::ApplyRandomErasing(transforms_[index], dst, chw_, normalization, ctx.rng(), noise);
    }
  }
}

DecodedImage Pipeline::DecodeForTiles(std::span<const uint8_t> data, std::string_view source,
                                      int min_long_side, std::vector<uint8_t>& pixels,
                                      SampleContext& ctx) const {
  auto timer = ctx.Time(Stage::kDecode);
  DecodeRequest request;
  if (options_.fused) {
    // The largest DCT scale that keeps the longer side at min_long_side or
    // more: no tile is then enlarged from fewer pixels than it shows.
    const ImageInfo info = ReadImageInfo(data, source, options_.decode);
    const int longer = std::max(info.width, info.height);
    while (request.max_scale < 8 && longer / (2 * request.max_scale) >= min_long_side) {
      request.max_scale *= 2;
    }
  }
  internal::RequestSource requests;
  requests.fixed = &request;
  requests.grow_only = true;  // a used buffer: its start is overwritten, nothing zeroed
  DecodedImage image = internal::DecodePlanned(data, source, pixels, requests, options_.decode);
  ctx.CountImagesDecoded();
  return image;
}

namespace {

// Error unless `tile`'s output lies inside a width x height image.
void CheckTileInside(const TilePlacement& tile, int width, int height) {
  const PipelinePlan& plan = tile.plan;
  if (tile.left < 0 || tile.top < 0 || tile.left + plan.out_width > width ||
      tile.top + plan.out_height > height) {
    throw Error("pipeline: a tile of " + std::to_string(plan.out_width) + "x" +
                std::to_string(plan.out_height) + " at (" + std::to_string(tile.left) + ", " +
                std::to_string(tile.top) + ") is outside its " + std::to_string(width) + "x" +
                std::to_string(height) + " image");
  }
}

// Sets every value of `dst` (the output's dtype, [3, h, w] or [h, w, 3])
// outside `tiles` to what byte `level` maps to in its channel: the tiles'
// pixels are written once, by their resampling.
void FillAroundTiles(Tensor& dst, bool chw, const internal::ValueMap& values, uint8_t level,
                     std::span<const internal::TileRect> tiles) {
  const int height = static_cast<int>(dst.shape()[chw ? 1 : 0]);
  const int width = static_cast<int>(dst.shape()[chw ? 2 : 1]);
  const size_t plane = static_cast<size_t>(width) * height;
  auto fill = [&](auto* data, auto value_of) {
    internal::ForEachGap(tiles, width, height, [&](int y, int x0, int x1) {
      const size_t first = static_cast<size_t>(y) * width + x0;
      const size_t count = static_cast<size_t>(x1 - x0);
      if (chw) {
        for (int c = 0; c < 3; ++c) std::fill_n(data + c * plane + first, count, value_of(c));
        return;
      }
      for (size_t i = first; i < first + count; ++i) {
        for (int c = 0; c < 3; ++c) data[i * 3 + c] = value_of(c);
      }
    });
  };
  switch (dst.dtype()) {
    case DType::kF32:
      fill(dst.data<float>(), [&](int c) { return values.f32[c][level]; });
      break;
    case DType::kF16:
      fill(static_cast<uint16_t*>(dst.raw()), [&](int c) { return values.f16[c][level]; });
      break;
    default:
      fill(static_cast<uint8_t*>(dst.raw()), [&](int) { return level; });
      break;
  }
}

}  // namespace

void Pipeline::DrawTile(const DecodedImage& image, const uint8_t* pixels,
                        const TilePlacement& tile, bool mirrored, RgbImageView composite,
                        SampleContext& ctx) const {
  const PipelinePlan& plan = tile.plan;
  if (plan.out_width <= 0 || plan.out_height <= 0) return;
  CheckTileInside(tile, composite.width, composite.height);
  auto timer = ctx.Time(Stage::kTransform);
  const size_t stride = static_cast<size_t>(composite.width) * 3;
  // Mirrored, the tile lands as far from the right edge as it would from
  // the left.
  const int left = mirrored ? composite.width - tile.left - plan.out_width : tile.left;
  uint8_t* dst = composite.data + tile.top * stride + static_cast<size_t>(left) * 3;
  std::vector<uint8_t>& buffer = ctx.scratch(kWorkSlot);
  const DecodedBox box = FindDecodedBox(plan, image);
  if (const std::optional<internal::PixelBox> whole = FusedLinearBox(plan, image, box, pixels)) {
    // One pass, mirrored as it is written.
    internal::OutputFormat format{DType::kU8, /*chw=*/false, mirrored, values_.get()};
    format.row_stride = static_cast<size_t>(composite.width);
    internal::ResizeLinearInto(internal::RgbImage{pixels, image.width, image.height}, whole->x,
                               whole->y, whole->width, whole->height, plan.out_width,
                               plan.out_height, format, dst, buffer);
    return;
  }
  Resample(plan, image, box, pixels, dst, buffer, stride);
  if (mirrored) {
    cv::Mat placed(plan.out_height, plan.out_width, CV_8UC3, dst, stride);
    cv::flip(placed, placed, /*flipCode=*/1);
  }
}

bool Pipeline::DrawComposite(std::span<const CompositeTile> tiles, int width, int height,
                             uint8_t fill, bool mirrored, Sample& out, std::string_view field,
                             SampleContext& ctx) const {
  // Pixel steps need the uint8 image, which a u8 output is, when they are
  // RandomHSV only (per pixel, in any layout); others take the canvas.
  if (pixel_augmentations_) {
    if (options_.dtype != DType::kU8) return false;
    for (const Transform& t : transforms_) {
      if (t.IsPixelAugmentation() && t.kind != Kind::kRandomHSV) return false;
    }
  }
  std::array<internal::PixelBox, 4> boxes;
  std::array<internal::TileRect, 4> covered{};  // each tile's output pixels, mirrored if need be
  if (tiles.size() > boxes.size()) return false;
  for (size_t k = 0; k < tiles.size(); ++k) {
    const CompositeTile& t = tiles[k];
    const PipelinePlan& plan = t.placement.plan;
    if (plan.out_width <= 0 || plan.out_height <= 0) continue;
    CheckTileInside(t.placement, width, height);
    const std::optional<internal::PixelBox> whole =
        FusedLinearBox(plan, *t.image, FindDecodedBox(plan, *t.image), t.pixels);
    if (!whole) return false;
    boxes[k] = *whole;
    const int left = mirrored ? width - t.placement.left - plan.out_width : t.placement.left;
    covered[k] = internal::TileRect{left, t.placement.top, left + plan.out_width,
                                    t.placement.top + plan.out_height};
  }
  auto timer = ctx.Time(Stage::kTransform);
  const Shape shape = chw_ ? Shape{3, height, width} : Shape{height, width, 3};
  Tensor dst = out.Allocate(field, options_.dtype, shape);
  FillAroundTiles(dst, chw_, *values_, fill,
                  std::span<const internal::TileRect>(covered.data(), tiles.size()));
  internal::OutputFormat format{options_.dtype, chw_, mirrored, values_.get()};
  format.row_stride = static_cast<size_t>(width);
  format.plane_stride = chw_ ? static_cast<size_t>(width) * height : 0;
  std::vector<uint8_t>& buffer = ctx.scratch(kWorkSlot);
  for (size_t k = 0; k < tiles.size(); ++k) {
    const CompositeTile& t = tiles[k];
    const PipelinePlan& plan = t.placement.plan;
    if (plan.out_width <= 0 || plan.out_height <= 0) continue;
    const size_t first = static_cast<size_t>(t.placement.top) * width + covered[k].x0;
    uint8_t* at = static_cast<uint8_t*>(dst.raw()) +
                  (chw_ ? first : first * 3) * DTypeSize(options_.dtype);
    const internal::PixelBox& b = boxes[k];
    internal::ResizeLinearInto(internal::RgbImage{t.pixels, t.image->width, t.image->height},
                               b.x, b.y, b.width, b.height, plan.out_width, plan.out_height,
                               format, at, buffer);
  }
  // RandomHSV on the output, drawn where WriteComposite draws it.
  for (const Transform& t : transforms_) {
    if (!t.IsPixelAugmentation()) continue;
    const RandomHsvParams params = DrawRandomHsv(t, ctx.rng());
    uint8_t* data = static_cast<uint8_t*>(dst.raw());
    if (chw_) {
      const size_t plane = static_cast<size_t>(width) * height;
      internal::ApplyRandomHsvPlanes(data, data + plane, data + 2 * plane,
                                     static_cast<int64_t>(plane), params);
    } else {
      ApplyRandomHsv(RgbImageView{data, height, width}, params);
    }
  }
  if (!erasing_.empty()) {
    thread_local std::vector<float> noise;
    for (const auto& [index, normalization] : erasing_) {
      internal::ApplyRandomErasing(transforms_[index], dst, chw_, normalization, ctx.rng(), noise);
    }
  }
  return true;
}

void Pipeline::WriteComposite(RgbImageView image, Sample& out, std::string_view field,
                              SampleContext& ctx) const {
  auto timer = ctx.Time(Stage::kTransform);
  std::vector<uint8_t>& buffer = ctx.scratch(kWorkSlot);
  for (const Transform& t : transforms_) {
    if (t.IsPixelAugmentation()) internal::ApplyPixelAugmentation(t, image, ctx.rng(), buffer);
  }
  const Shape shape = chw_ ? Shape{3, image.height, image.width} : Shape{image.height, image.width, 3};
  Tensor dst = out.Allocate(field, options_.dtype, shape);
  internal::WriteOutput(image.data, image.width, image.height, /*flip=*/false, chw_,
                        options_.dtype, *values_, dst.raw());
  if (!erasing_.empty()) {
    thread_local std::vector<float> noise;
    for (const auto& [index, normalization] : erasing_) {
      internal::ApplyRandomErasing(transforms_[index], dst, chw_, normalization, ctx.rng(), noise);
    }
  }
}

bool Pipeline::ChoosesFromBoxes() const {
  return std::any_of(transforms_.begin(), transforms_.end(),
                     [](const Transform& t) { return t.kind == Kind::kRandomIoUCrop; });
}

void Pipeline::CheckWithoutObjects(const std::string& dataset) const {
  if (!ChoosesFromBoxes()) return;
  throw Error(dataset + ": random_iou_crop chooses its crop from the objects' boxes, and its "
              "images have none; use it in a detection dataset (CocoDetection, VOCDetection, "
              "YoloDetection)");
}

std::string Pipeline::ToString() const {
  std::string out = TransformsToString(transforms_);
  if (out.empty()) out = "decode";
  out += std::string(" -> ") + DTypeName(options_.dtype);
  if (!options_.fused) out += " (unfused)";
  return out;
}

namespace {

// A recipe's geometric steps, then Normalize + ToCHW unless the output is u8
// (normalized on the accelerator).
Pipeline Recipe(std::vector<Transform> steps, DType dtype, const DecodeOptions& decode) {
  if (dtype != DType::kU8) {
    steps.push_back(Transform::Normalize());
    steps.push_back(Transform::ToCHW());
  }
  PipelineOptions options;
  options.dtype = dtype;
  options.decode = decode;
  return Pipeline(std::move(steps), options);
}

}  // namespace

PipelinePlan PlanSourceBox(double x, double y, double width, double height, int out_width,
                           int out_height, int image_width, int image_height) {
  PipelinePlan plan;
  plan.out_width = out_width;
  plan.out_height = out_height;
  plan.image_width = image_width;
  plan.image_height = image_height;
  FinishPlan(x, y, width, height, plan);
  return plan;
}

Pipeline TrainPipeline(int size, DType dtype, const DecodeOptions& decode) {
  return Recipe({Transform::RandomResizedCrop(size), Transform::RandomHorizontalFlip(0.5)}, dtype,
                decode);
}

Pipeline ValPipeline(int resize, int crop, DType dtype, const DecodeOptions& decode) {
  return Recipe({Transform::Resize(resize), Transform::CenterCrop(crop)}, dtype, decode);
}

}  // namespace feedline::vision
