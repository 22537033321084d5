// Synthetic images and ImageNet-style folders, for tests, benchmarks and
// `feedline` demos without a real dataset.
//
// Part of feedline_synth (include/feedline/synth/, src/synth/): synthetic
// data built on the public API only, for the tests, benchmarks, `feedline
// synth` and the Python module. Not installed with the library.
//
// The images look like photographs to a codec, not like flat test cards:
// gradients, sinusoid textures over a range of frequencies, hard-edged shapes
// and sensor-like noise, so that their JPEGs decode at the speed of natural
// images. Everything is a function of the seed.
//
// Thread safety: every function here is reentrant and keeps no shared state.
//
// Example:
//   std::vector<std::string> broken =
//       WriteSyntheticImageFolder("/tmp/imgs", /*images=*/2000, /*classes=*/10,
//                                 /*seed=*/1, /*broken=*/5);
#ifndef FEEDLINE_SYNTH_SYNTH_H_
#define FEEDLINE_SYNTH_SYNTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/synth/encode.h"

namespace feedline::vision {

// height rows of width * 3 bytes of textured RGB. REQUIRES width, height > 0.
std::vector<uint8_t> SynthesizeImage(int width, int height, uint64_t seed);

// SynthesizeImage encoded as JPEG.
std::vector<uint8_t> SynthesizeJpeg(int width, int height, uint64_t seed,
                                    const JpegEncodeOptions& options = {});

// Writes an ImageFolder tree under `dir` (created if missing):
// dir/class_000/img_0000000.jpg, ... with `images` decodable images spread
// evenly over `classes` class folders, plus `broken` undecodable files of
// assorted kinds (truncated JPEG, empty file, random bytes, a GIF named .jpg,
// a PNG with a bad CRC, a truncated PNG, a JPEG with a damaged header).
// The images have a short side of 300-500 pixels, JPEG quality 85-96, mostly
// 4:2:0 with some 4:4:4 and 4:2:2, some progressive, some grayscale, a few
// CMYK and a rare PNG named .jpg; about 40 KiB on average.
// Returns the paths of the broken files. Uses all cores. Throws Error on bad
// arguments or when a file cannot be written.
std::vector<std::string> WriteSyntheticImageFolder(const std::string& dir, int64_t images,
                                                   int classes, uint64_t seed, int64_t broken = 0);

}  // namespace feedline::vision

#endif  // FEEDLINE_SYNTH_SYNTH_H_
