#include "feedline/vision/random_hsv.h"

#include <algorithm>
#include <cmath>

#include "src/vision/opencv.h"

namespace feedline::vision {
namespace {

// OpenCV's 8-bit hue wraps at 180 (two degrees a level).
constexpr double kHueLevels = 180;
constexpr int kStripBytes = 64 << 10;

}  // namespace

RandomHsvParams DrawRandomHsv(const Transform& hsv, Rng& rng) {
  RandomHsvParams params;
  // The gains are kept as the ranges [-gain, gain].
  const std::array<double, 3> gains = {hsv.hue[1], hsv.saturation[1], hsv.brightness[1]};
  if (gains[0] == 0 && gains[1] == 0 && gains[2] == 0) return params;
  for (int c = 0; c < 3; ++c) params.factors[c] = 1 + gains[c] * rng.Uniform(-1, 1);
  return params;
}

void ApplyRandomHsv(RgbImageView image, const RandomHsvParams& params) {
  const std::array<double, 3>& r = params.factors;
  if (r[0] == 1 && r[1] == 1 && r[2] == 1) return;
  cv::Mat lut(1, 256, CV_8UC3);
  for (int x = 0; x < 256; ++x) {
    cv::Vec3b& entry = lut.at<cv::Vec3b>(0, x);
    entry[0] = static_cast<uint8_t>(std::fmod(x * r[0], kHueLevels));
    entry[1] = static_cast<uint8_t>(std::clamp(x * r[1], 0.0, 255.0));
    entry[2] = static_cast<uint8_t>(std::clamp(x * r[2], 0.0, 255.0));
  }
  // In strips of rows, so that the HSV copy stays in the cache between the
  // three passes (a 640 x 640 image whole is 1.2 MB each way).
  cv::Mat rgb(image.height, image.width, CV_8UC3, image.data);
  const int strip = std::max(1, kStripBytes / std::max(1, image.width * 3));
  cv::Mat hsv;
  for (int y = 0; y < image.height; y += strip) {
    cv::Mat rows = rgb.rowRange(y, std::min(y + strip, image.height));
    cv::cvtColor(rows, hsv, cv::COLOR_RGB2HSV);
    cv::LUT(hsv, lut, hsv);
    cv::cvtColor(hsv, rows, cv::COLOR_HSV2RGB);
  }
}

}  // namespace feedline::vision
