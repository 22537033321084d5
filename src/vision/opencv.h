// OpenCV's core and imgproc headers, included once for the vision code.
// OpenCV 4's headers mix enum types in arithmetic, which C++20 deprecates;
// the warnings are silenced for these headers only.
#ifndef FEEDLINE_SRC_VISION_OPENCV_H_
#define FEEDLINE_SRC_VISION_OPENCV_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#if defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-anon-enum-enum-conversion"
#endif
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#pragma GCC diagnostic pop

#endif  // FEEDLINE_SRC_VISION_OPENCV_H_
