// The pipeline's augmentation steps: the pixel augmentations (ColorJitter,
// RandomPhotometricDistort, RandomHSV and the AutoAugment family) on the uint8 image
// (after the geometric steps, or on the whole decoded image before them),
// and RandomErasing on the output tensor. Pipeline::Run calls these only
// when its transforms list such steps, so the fused path without them is
// unchanged.
#ifndef FEEDLINE_SRC_VISION_AUGMENT_H_
#define FEEDLINE_SRC_VISION_AUGMENT_H_

#include <cstdint>
#include <vector>

#include "feedline/rng.h"
#include "feedline/tensor.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/random_erasing.h"
#include "feedline/vision/random_hsv.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision::internal {

// Draws the parameters of `t` (IsPixelAugmentation()) from `rng` and
// applies it to `image`. `scratch` is reused between calls.
void ApplyPixelAugmentation(const Transform& t, RgbImageView image, Rng& rng,
                            std::vector<uint8_t>& scratch);

// RandomHSV (ApplyRandomHsv, the same bytes) on three planes of `pixels`
// bytes each, in place: a u8 channels-first output.
void ApplyRandomHsvPlanes(uint8_t* red, uint8_t* green, uint8_t* blue, int64_t pixels,
                          const RandomHsvParams& params);

// Draws and applies a RandomErasing step to the output tensor (float,
// [3, H, W] when chw else [H, W, 3]). `noise` is reused between calls.
void ApplyRandomErasing(const Transform& t, const Tensor& image, bool chw,
                        const ErasingNormalization& normalization, Rng& rng,
                        std::vector<float>& noise);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_AUGMENT_H_
