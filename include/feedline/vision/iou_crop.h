// The crop of torchvision's references/detection RandomIoUCrop (SSD's
// sampling), chosen from an image's object boxes alone, so that the
// pipeline can decode only the crop.
//
// Thread safety: pure functions.
#ifndef FEEDLINE_VISION_IOU_CROP_H_
#define FEEDLINE_VISION_IOU_CROP_H_

#include <array>
#include <optional>
#include <span>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// The references' test of an object kept by a crop: its box's centre
// strictly inside the crop (box x0, y0, x1, y1 in the same pixels).
FEEDLINE_EXPORT bool CentredIn(const std::array<double, 4>& box, const CropBox& crop);

// The crop for a height x width image whose objects have `boxes` (x0, y0,
// x1, y1 in its pixels), or nullopt for "leave the image as it is": an
// option of 1 or more was drawn, or there are no boxes. Random numbers from
// `rng` in the references' order: UniformInt(options) for the minimum IoU;
// then per trial two uniforms for the width and height fractions (in
// t.scale), and, when the aspect ratio new_w / new_h is in t.ratio, two
// for the left and top offsets. A trial succeeds when some box has its
// centre strictly inside the crop, and one such box overlaps the crop by
// at least the minimum IoU; after t.trials failures an option is drawn
// again. Sizes and offsets are truncated to whole pixels as the references
// do. REQUIRES: t.kind == kRandomIoUCrop.
FEEDLINE_EXPORT std::optional<CropBox> RandomIoUCropBox(
    int height, int width, std::span<const std::array<double, 4>> boxes, const Transform& t,
    Rng& rng);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_IOU_CROP_H_
