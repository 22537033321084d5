// Transform: one step of an image pipeline, with the parameters and semantics
// of torchvision.transforms (and paddle.vision.transforms): Resize,
// CenterCrop, RandomResizedCrop, RandomHorizontalFlip, Normalize, ToCHW, and
// the augmentations of the classification recipes: ColorJitter,
// TrivialAugmentWide, RandAugment, AutoAugment (on the uint8 image after
// the geometric steps) and RandomErasing (on the output tensor), and the
// detection steps of torchvision's references/detection: RandomZoomOut,
// RandomIoUCrop (chosen from the image's boxes), RandomPhotometricDistort,
// RandomShortestSize, ScaleJitter and FixedSizeCrop.
//
// A Transform is a plain description; a Pipeline (pipeline.h) runs a list of
// them. Thread safety: Transforms are values; concurrent reads are safe.
//
// Example:
//   std::vector<Transform> steps = {Transform::RandomResizedCrop(224),
//                                   Transform::RandomHorizontalFlip(),
//                                   Transform::Normalize(), Transform::ToCHW()};
#ifndef FEEDLINE_VISION_TRANSFORMS_H_
#define FEEDLINE_VISION_TRANSFORMS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/rng.h"

namespace feedline::vision {

// How Resize and RandomResizedCrop resample (OpenCV's imgproc underneath).
enum class Interpolation : uint8_t {
  // Bilinear (cv::INTER_LINEAR); when shrinking by 2x or more on an axis, and
  // not enlarging on the other, pixel-area averaging (cv::INTER_AREA) instead,
  // which plays the part of torchvision's antialiasing.
  kBilinear,
  kNearest,  // cv::INTER_NEAREST
  kArea,     // cv::INTER_AREA whenever shrinking
};
// "bilinear", "nearest" or "area".
FEEDLINE_EXPORT const char* InterpolationName(Interpolation interpolation);
// The inverse of InterpolationName; throws Error naming the spellings otherwise.
FEEDLINE_EXPORT Interpolation ParseInterpolation(std::string_view name);

// The AutoAugment policies learned on each data set (torchvision's
// AutoAugmentPolicy).
enum class AutoAugmentPolicy : uint8_t { kImageNet, kCifar10, kSvhn };
// "imagenet", "cifar10" or "svhn".
FEEDLINE_EXPORT const char* AutoAugmentPolicyName(AutoAugmentPolicy policy);
// The inverse of AutoAugmentPolicyName; throws Error naming the spellings
// otherwise.
FEEDLINE_EXPORT AutoAugmentPolicy ParseAutoAugmentPolicy(std::string_view name);

// ImageNet channel statistics (RGB, of pixel values scaled to [0, 1]).
inline constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

struct FEEDLINE_EXPORT Transform {
  enum class Kind : uint8_t {
    kResize,
    kCenterCrop,
    kRandomResizedCrop,
    kRandomHorizontalFlip,
    kNormalize,
    kToCHW,
    kColorJitter,
    kTrivialAugmentWide,
    kRandAugment,
    kAutoAugment,
    kRandomErasing,
    kRandomZoomOut,
    kRandomIoUCrop,
    kRandomPhotometricDistort,
    kRandomShortestSize,
    kScaleJitter,
    kFixedSizeCrop,
    kRandomHSV,
  };

  // torchvision.transforms.Resize(size): the shorter side becomes `size`, the
  // longer one int(size * long / short), capped at max_size (0: no cap) as in
  // torchvision.
  static Transform Resize(int size, Interpolation interpolation = Interpolation::kBilinear,
                          int max_size = 0);
  // torchvision.transforms.Resize((height, width)).
  static Transform Resize(int height, int width,
                          Interpolation interpolation = Interpolation::kBilinear);
  // torchvision.transforms.CenterCrop: zero padding where the crop is larger
  // than the image.
  static Transform CenterCrop(int size);
  static Transform CenterCrop(int height, int width);
  // torchvision.transforms.RandomResizedCrop; see RandomResizedCropBox.
  static Transform RandomResizedCrop(int size, std::array<double, 2> scale = {0.08, 1.0},
                                     std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0},
                                     Interpolation interpolation = Interpolation::kBilinear);
  static Transform RandomResizedCrop(int height, int width,
                                     std::array<double, 2> scale = {0.08, 1.0},
                                     std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0},
                                     Interpolation interpolation = Interpolation::kBilinear);
  // Mirrors left-right with probability p.
  static Transform RandomHorizontalFlip(double p = 0.5);
  // (x / 255 - mean) / std per channel, as ToTensor then Normalize. Only for
  // float outputs.
  static Transform Normalize(std::array<float, 3> mean = kImageNetMean,
                             std::array<float, 3> std = kImageNetStd);
  // Channels first: [3, H, W] instead of [H, W, 3].
  static Transform ToCHW();

  // torchvision.transforms.ColorJitter with the factor ranges [min, max]
  // (ColorJitter's _check_input has already turned a number v into
  // [max(0, 1 - v), 1 + v], or [-v, v] for hue). A range of [1, 1] ([0, 0]
  // for hue) leaves that adjustment out, as torchvision's None.
  static Transform ColorJitter(std::array<double, 2> brightness = {1, 1},
                               std::array<double, 2> contrast = {1, 1},
                               std::array<double, 2> saturation = {1, 1},
                               std::array<double, 2> hue = {0, 0});
  // torchvision.transforms.TrivialAugmentWide: one op of 14, a random
  // magnitude bin. Interpolation: kNearest (the default) or kBilinear.
  static Transform TrivialAugmentWide(int num_magnitude_bins = 31,
                                      Interpolation interpolation = Interpolation::kNearest,
                                      std::array<float, 3> fill = {0, 0, 0});
  // torchvision.transforms.RandAugment: num_ops random ops at a fixed
  // magnitude bin.
  static Transform RandAugment(int num_ops = 2, int magnitude = 9, int num_magnitude_bins = 31,
                               Interpolation interpolation = Interpolation::kNearest,
                               std::array<float, 3> fill = {0, 0, 0});
  // torchvision.transforms.AutoAugment: one of the policy's 25 sub-policies.
  static Transform AutoAugment(AutoAugmentPolicy policy = AutoAugmentPolicy::kImageNet,
                               Interpolation interpolation = Interpolation::kNearest,
                               std::array<float, 3> fill = {0, 0, 0});
  // torchvision.transforms.RandomErasing on the float output tensor: with
  // probability p, a rectangle of area fraction in `scale` and aspect ratio
  // (height / width) in `ratio` is set to `value` per channel, or to
  // standard normal noise when random_value (value="random"). The value is
  // in the units of the tensor at the point where RandomErasing is listed:
  // before Normalize it is normalized with the image. Only for float outputs.
  static Transform RandomErasing(double p = 0.5, std::array<double, 2> scale = {0.02, 0.33},
                                 std::array<double, 2> ratio = {0.3, 3.3},
                                 std::array<float, 3> value = {0, 0, 0},
                                 bool random_value = false);

  // The references' RandomZoomOut: with probability p, the image is placed
  // on a canvas side_range times its size (a factor drawn uniformly from
  // side_range, the offsets uniformly), the rest filled with `fill`
  // (0-255 per channel, truncated to whole levels as PIL's pad takes it).
  // Boxes and masks move with the image.
  static Transform RandomZoomOut(std::array<float, 3> fill = {0, 0, 0},
                                 std::array<double, 2> side_range = {1.0, 4.0}, double p = 0.5);
  // The references' RandomIoUCrop (SSD's sampling): draws one of
  // `options`, a minimum IoU (1 or more: the image is left as it is), then
  // up to `trials` crops of width and height fractions in `scale` and
  // aspect ratio (width / height) in `ratio`, and takes the first whose
  // centre-inside objects include one with that IoU or more; after
  // `trials` failures it draws an option again. Only objects whose box
  // centre lies inside the crop are kept. Chosen from the boxes before
  // decoding, so only the crop is decoded. An image without objects is
  // left as it is (torchvision's would draw options until it draws 1).
  static Transform RandomIoUCrop(std::array<double, 2> scale = {0.3, 1.0},
                                 std::array<double, 2> ratio = {0.5, 2.0},
                                 std::vector<double> options = {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0},
                                 int trials = 40);
  // The references' RandomPhotometricDistort: brightness with probability
  // p, then contrast either before or after saturation and hue (a coin),
  // each with probability p, then with probability p a random permutation
  // of the channels; factors drawn uniformly from the ranges, the
  // adjustments those of ColorJitter. Listed before the geometric steps
  // (where the references put it) it runs on the whole decoded image, so
  // contrast's mean is the image's and a RandomZoomOut's fill is left as
  // it is.
  static Transform RandomPhotometricDistort(std::array<double, 2> contrast = {0.5, 1.5},
                                            std::array<double, 2> saturation = {0.5, 1.5},
                                            std::array<double, 2> hue = {-0.05, 0.05},
                                            std::array<double, 2> brightness = {0.875, 1.125},
                                            double p = 0.5);

  // The references' RandomShortestSize (their multiscale preset): a short
  // side drawn from `sizes`, the long side capped at max_size: the image
  // scaled by min(size / short, max_size / long), each side truncated to
  // whole pixels.
  static Transform RandomShortestSize(std::vector<int> sizes, int max_size,
                                      Interpolation interpolation = Interpolation::kBilinear);
  // The references' ScaleJitter (large-scale jitter, their lsj preset):
  // the image scaled by min(target_width / height, target_height / width)
  // times a factor drawn from `scale_range`, each side truncated (at least
  // 1). The references' own pairing of target and image sides, kept: for
  // their square 1024 x 1024 target it is the usual fit.
  static Transform ScaleJitter(int target_height, int target_width,
                               std::array<double, 2> scale_range = {0.1, 2.0},
                               Interpolation interpolation = Interpolation::kBilinear);
  // The references' FixedSizeCrop: a window of at most height x width at a
  // random offset (one uniform for both axes, as theirs), then padded at
  // the right and bottom with `fill` to exactly height x width. Objects
  // left without area are dropped.
  static Transform FixedSizeCrop(int height, int width, std::array<float, 3> fill = {0, 0, 0});

  // YOLO's HSV augmentation (Ultralytics' RandomHSV, random_hsv.h): hue,
  // saturation and value multiplied by 1 + gain * u, u uniform in [-1, 1)
  // for each. Gains in [0, 1]; kept in hue, saturation and brightness as
  // [-gain, gain].
  static Transform RandomHSV(double hgain = 0.015, double sgain = 0.7, double vgain = 0.4);

  // ColorJitter, RandomPhotometricDistort, RandomHSV and the AutoAugment
  // family: they change the pixels of the uint8 image, between the geometric steps and
  // the output (RandomPhotometricDistort may also come before them).
  bool IsPixelAugmentation() const;
  // The steps of torchvision's detection references whose output size is
  // random: RandomZoomOut, RandomIoUCrop, RandomShortestSize, ScaleJitter.
  bool IsDetectionGeometry() const;

  // Throws Error naming the bad parameter. The factories call it.
  void Validate() const;
  // The spelling ParseTransforms reads, e.g. "random_resized_crop(224,224,
  // scale=0.08:1,ratio=0.75:1.3333333333333333,interpolation=bilinear)".
  std::string ToString() const;
  bool operator==(const Transform& other) const = default;

  Kind kind = Kind::kToCHW;
  // Resize: height is the short side when width == 0. Crops (and
  // FixedSizeCrop): output size. ScaleJitter: the target size.
  int height = 0;
  int width = 0;
  int max_size = 0;  // Resize, RandomShortestSize
  Interpolation interpolation = Interpolation::kBilinear;
  // RandomResizedCrop and RandomErasing: area fractions; RandomIoUCrop:
  // side fractions; ScaleJitter: its scale_range.
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};
  double p = 0.5;
  std::array<float, 3> mean = kImageNetMean;
  std::array<float, 3> std = kImageNetStd;
  // ColorJitter's factor ranges.
  std::array<double, 2> brightness = {1, 1};
  std::array<double, 2> contrast = {1, 1};
  std::array<double, 2> saturation = {1, 1};
  std::array<double, 2> hue = {0, 0};
  // The AutoAugment family (RandomErasing uses p, scale and ratio above).
  int num_ops = 2;
  int magnitude = 9;
  int num_magnitude_bins = 31;
  AutoAugmentPolicy policy = AutoAugmentPolicy::kImageNet;
  // The AutoAugment family's fill outside a warped image (0-255),
  // RandomZoomOut's and FixedSizeCrop's padding, and RandomErasing's value
  // unless random_value.
  std::array<float, 3> fill = {0, 0, 0};
  bool random_value = false;
  // RandomZoomOut's canvas size range (uses fill and p above).
  std::array<double, 2> side_range = {1.0, 4.0};
  // RandomIoUCrop's minimum IoUs to draw from and tries per draw (uses
  // scale and ratio above).
  std::vector<double> iou_options;
  int trials = 40;
  // RandomShortestSize's short sides (uses max_size and interpolation).
  std::vector<int> sizes;
};

// A crop of an image: rows [top, top + height), columns [left, left + width).
struct FEEDLINE_EXPORT CropBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;

  bool operator==(const CropBox& other) const = default;
};

// torchvision's RandomResizedCrop.get_params for a height x width image, with
// its random numbers drawn from `rng` in this order: for each of up to 10
// tries, Uniform(scale[0], scale[1]) for the area fraction, then
// Uniform(log ratio[0], log ratio[1]) for the log aspect ratio; on success
// UniformInt(height - h + 1) for top, then UniformInt(width - w + 1) for
// left. w = round(sqrt(area * r)), h = round(sqrt(area / r)), rounding half
// to even like Python. After 10 failures: the central crop, clamped to the
// ratio range.
FEEDLINE_EXPORT CropBox RandomResizedCropBox(int height, int width,
                                             const std::array<double, 2>& scale,
                                             const std::array<double, 2>& ratio, Rng& rng);

// Reads a list of transforms written as by Transform::ToString, separated by
// ';', e.g. "resize(256); center_crop(224); normalize; to_chw". Names may
// also be written as in torchvision ("RandomResizedCrop(224)"). Positional
// arguments are sizes (one, or height and width) or, for
// random_horizontal_flip and random_erasing, p; the rest are key=value with
// ranges and triples written a:b and a:b:c, e.g.
// "color_jitter(brightness=0.6:1.4,hue=-0.1:0.1)", "rand_augment(num_ops=2,
// magnitude=9)", "auto_augment(policy=imagenet)", "random_erasing(0.25,
// value=random)". Throws Error naming the bad item.
FEEDLINE_EXPORT std::vector<Transform> ParseTransforms(std::string_view spec);
// The inverse of ParseTransforms.
FEEDLINE_EXPORT std::string TransformsToString(const std::vector<Transform>& transforms);

// torchvision's Resize output size for an image of height x width.
// Returns {height, width}.
FEEDLINE_EXPORT std::array<int, 2> ResizedSize(const Transform& resize, int height, int width);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_TRANSFORMS_H_
