// torchvision.transforms.RandomErasing on a float image tensor: its
// parameter draws (get_params) and the erase itself.
//
// Thread safety: the functions keep no state.
//
// Example:
//   const Transform erasing = Transform::RandomErasing(0.25);
//   ErasingBox box = DrawRandomErasing(erasing, 224, 224, 3, rng, &noise);
//   EraseTensor(image, /*chw=*/true, box, erasing, noise, {});
#ifndef FEEDLINE_VISION_RANDOM_ERASING_H_
#define FEEDLINE_VISION_RANDOM_ERASING_H_

#include <array>
#include <vector>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/tensor.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// Rows [top, top + height) and columns [left, left + width) are erased when
// `erase`.
struct FEEDLINE_EXPORT ErasingBox {
  bool erase = false;
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// RandomErasing.forward's draws, in torchvision's order, from `rng`:
// Uniform() < p, else nothing else is drawn; then up to 10 tries of
// area * Uniform(scale) and exp(Uniform(log ratio)), with
// h = round(sqrt(area * ratio)) and w = round(sqrt(area / ratio)) (half to
// even) accepted when h < height and w < width; for value="random" the
// channels * h * w standard normal values ([c, h, w] order) go to *noise,
// then top = randint(height - h + 1) and left = randint(width - w + 1).
// When no try fits, nothing is erased (torchvision returns the image).
// REQUIRES: erasing.kind == kRandomErasing; noise != nullptr if
// erasing.random_value.
FEEDLINE_EXPORT ErasingBox DrawRandomErasing(const Transform& erasing, int height, int width,
                                             int channels, Rng& rng, std::vector<float>* noise);

// Normalize(mean, std) applied to the erased values: RandomErasing listed
// before Normalize erases in [0, 1] units. The default is no change.
struct FEEDLINE_EXPORT ErasingNormalization {
  std::array<float, 3> mean = {0, 0, 0};
  std::array<float, 3> std = {1, 1, 1};
};

// Writes the erased box into `image`, an f32 or f16 tensor [3, H, W] (chw)
// or [H, W, 3]: erasing.fill per channel, or `noise` when
// erasing.random_value, each mapped by `normalization`.
FEEDLINE_EXPORT void EraseTensor(const Tensor& image, bool chw, const ErasingBox& box,
                                 const Transform& erasing, const std::vector<float>& noise,
                                 const ErasingNormalization& normalization);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_RANDOM_ERASING_H_
