// Affine warps of image_ops.h: torchvision's matrix conventions, OpenCV's
// warpAffine for the resampling.
#include <cmath>
#include <cstring>
#include <numbers>

#include "feedline/vision/image_ops.h"
#include "src/vision/opencv.h"

namespace feedline::vision {

std::array<double, 6> InverseAffineMatrix(const std::array<double, 2>& center, double angle,
                                          const std::array<double, 2>& translate, double scale,
                                          const std::array<double, 2>& shear) {
  // torchvision.transforms.functional._get_inverse_affine_matrix, line by line.
  const double radians = std::numbers::pi / 180.0;
  const double rot = angle * radians;
  const double sx = shear[0] * radians;
  const double sy = shear[1] * radians;
  const double cx = center[0], cy = center[1];
  const double tx = translate[0], ty = translate[1];
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};
  for (double& v : m) v /= scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

void Affine(RgbImageView image, const std::array<double, 6>& matrix, Interpolation interpolation,
            const std::array<float, 3>& fill, std::vector<uint8_t>& scratch) {
  const int w = image.width, h = image.height;
  if (w <= 0 || h <= 0) return;
  // torchvision samples output pixel (j, i) at
  //   x = j - (w - 1) / 2, y = i - (h - 1) / 2   (pixel centres, origin at
  //   the image centre), source = matrix * (x, y, 1), then
  //   column = source_x + (w - 1) / 2, row = source_y + (h - 1) / 2
  // (grid_sample with align_corners=False). As one map from output pixel
  // indices to source pixel indices, for warpAffine's WARP_INVERSE_MAP:
  const double ox = (w - 1) / 2.0, oy = (h - 1) / 2.0;
  const double m[6] = {
      matrix[0], matrix[1], matrix[2] + ox - matrix[0] * ox - matrix[1] * oy,
      matrix[3], matrix[4], matrix[5] + oy - matrix[3] * ox - matrix[4] * oy,
  };
  scratch.assign(image.data, image.data + image.bytes());
  const cv::Mat src(h, w, CV_8UC3, scratch.data());
  cv::Mat dst(h, w, CV_8UC3, image.data);
  const int flags = (interpolation == Interpolation::kNearest ? cv::INTER_NEAREST : cv::INTER_LINEAR) |
                    cv::WARP_INVERSE_MAP;
  cv::warpAffine(src, dst, cv::Mat(2, 3, CV_64F, const_cast<double*>(m)), dst.size(), flags,
                 cv::BORDER_CONSTANT, cv::Scalar(fill[0], fill[1], fill[2]));
}

}  // namespace feedline::vision
