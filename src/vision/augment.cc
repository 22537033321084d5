#include "src/vision/augment.h"

#include "feedline/vision/auto_augment.h"
#include "feedline/vision/color_jitter.h"
#include "feedline/vision/photometric_distort.h"
#include "feedline/vision/random_hsv.h"

namespace feedline::vision::internal {

void ApplyPixelAugmentation(const Transform& t, RgbImageView image, Rng& rng,
                            std::vector<uint8_t>& scratch) {
  std::vector<AugmentChoice> choices;
  switch (t.kind) {
    case Transform::Kind::kColorJitter:
      ApplyColorJitter(image, DrawColorJitter(t, rng));
      return;
    case Transform::Kind::kRandomPhotometricDistort:
      ApplyPhotometricDistort(image, DrawPhotometricDistort(t, rng));
      return;
    case Transform::Kind::kRandomHSV:
      ApplyRandomHsv(image, DrawRandomHsv(t, rng));
      return;
    case Transform::Kind::kTrivialAugmentWide:
      choices = DrawTrivialAugmentWide(t.num_magnitude_bins, rng);
      break;
    case Transform::Kind::kRandAugment:
      choices = DrawRandAugment(t.num_ops, t.magnitude, t.num_magnitude_bins, image.height,
                                image.width, rng);
      break;
    case Transform::Kind::kAutoAugment:
      choices = DrawAutoAugment(t.policy, image.height, image.width, rng);
      break;
    default:
      return;
  }
  for (const AugmentChoice& choice : choices) {
    ApplyAugmentOp(image, choice.op, choice.magnitude, t.interpolation, t.fill, scratch);
  }
}

void ApplyRandomErasing(const Transform& t, const Tensor& image, bool chw,
                        const ErasingNormalization& normalization, Rng& rng,
                        std::vector<float>& noise) {
  const Shape& shape = image.shape();
  const int height = static_cast<int>(chw ? shape[1] : shape[0]);
  const int width = static_cast<int>(chw ? shape[2] : shape[1]);
  const ErasingBox box = DrawRandomErasing(t, height, width, 3, rng, &noise);
  EraseTensor(image, chw, box, t, noise, normalization);
}

}  // namespace feedline::vision::internal
