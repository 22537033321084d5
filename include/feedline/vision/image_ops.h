// Image operations on uint8 RGB pixels with the arithmetic of
// torchvision.transforms.functional on uint8 tensors (functional_tensor.py,
// torchvision 0.14): the building blocks of ColorJitter and the AutoAugment
// family (color_jitter.h, auto_augment.h).
//
// Where torchvision computes in float32 and converts back with .to(uint8)
// (blends, grayscale, hue, autocontrast), the same float32 operations run in
// the same order and the result is truncated the same way, so the bytes
// agree with torchvision's (python/tests/vision/test_augment.py). The exceptions:
// Affine, whose resampling is OpenCV's (docs/vision.md gives the measured
// agreement), and, in principle, AdjustContrast's mean once the grayscale
// sum passes 2^24 (from 65,794 pixels), where torch's float32 summation may
// round differently (equal on the 1024x768 images tried).
//
// Thread safety: the functions keep no state.
//
// Example:
//   RgbImageView image{pixels.data(), height, width};
//   AdjustBrightness(image, 1.3);
//   Affine(image, InverseAffineMatrix(w, h, {0, 0}, 30.0, {0, 0}, 1.0, {0, 0}),
//          Interpolation::kNearest, {0, 0, 0}, scratch);
#ifndef FEEDLINE_VISION_IMAGE_OPS_H_
#define FEEDLINE_VISION_IMAGE_OPS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "feedline/export.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// height rows of width packed RGB pixels (3 bytes each), no row padding.
// The operations change the pixels in place.
struct FEEDLINE_EXPORT RgbImageView {
  uint8_t* data = nullptr;
  int height = 0;
  int width = 0;

  size_t bytes() const { return static_cast<size_t>(height) * width * 3; }
};

// Blend with black: factor * x (adjust_brightness). REQUIRES: factor >= 0.
FEEDLINE_EXPORT void AdjustBrightness(RgbImageView image, double factor);
// Blend with the mean of the grayscale image (adjust_contrast).
FEEDLINE_EXPORT void AdjustContrast(RgbImageView image, double factor);
// Blend with the grayscale image (adjust_saturation).
FEEDLINE_EXPORT void AdjustSaturation(RgbImageView image, double factor);
// Shift the hue by `factor` turns in HSV (adjust_hue). REQUIRES: |factor| <= 0.5.
FEEDLINE_EXPORT void AdjustHue(RgbImageView image, double factor);
// Blend with the image blurred by [[1,1,1],[1,5,1],[1,1,1]] / 13, border
// pixels kept (adjust_sharpness).
FEEDLINE_EXPORT void AdjustSharpness(RgbImageView image, double factor,
                                     std::vector<uint8_t>& scratch);
// Keep the top `bits` bits of each value (posterize). REQUIRES: 0 <= bits <= 8.
FEEDLINE_EXPORT void Posterize(RgbImageView image, int bits);
// Invert the values >= threshold (solarize).
FEEDLINE_EXPORT void Solarize(RgbImageView image, double threshold);
// Stretch each channel to [0, 255] (autocontrast).
FEEDLINE_EXPORT void AutoContrast(RgbImageView image);
// Equalize each channel's histogram (equalize, torchvision's integer LUT).
FEEDLINE_EXPORT void Equalize(RgbImageView image);
// 255 - x (invert).
FEEDLINE_EXPORT void Invert(RgbImageView image);

// torchvision's _get_inverse_affine_matrix: the output-to-input matrix
// (row-major 2x3) for a rotation by `angle` degrees (counter-clockwise for
// positive angles in torchvision.affine's convention), translation
// (pixels), scale and shear (degrees, x then y) about `center`, in
// coordinates whose origin is the image centre (torchvision's center_f).
FEEDLINE_EXPORT std::array<double, 6> InverseAffineMatrix(const std::array<double, 2>& center,
                                                          double angle,
                                                          const std::array<double, 2>& translate,
                                                          double scale,
                                                          const std::array<double, 2>& shear);

// The output-to-input map `matrix` (as from InverseAffineMatrix) applied
// with torchvision's tensor conventions (pixel centres, origin at the image
// centre, output the input's size), by cv::warpAffine; pixels mapped from
// outside the image are `fill`. Interpolation: kNearest or kBilinear.
FEEDLINE_EXPORT void Affine(RgbImageView image, const std::array<double, 6>& matrix,
                            Interpolation interpolation, const std::array<float, 3>& fill,
                            std::vector<uint8_t>& scratch);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_IMAGE_OPS_H_
