// Image encoding (JPEG, PNG, WebP) from 8-bit pixels, for writing synthetic
// datasets and test images.
//
// Part of feedline_synth (include/feedline/synth/, src/synth/): synthetic
// data built on the public API only, for the tests, benchmarks, `feedline
// synth` and the Python module. Not installed with the library.
//
// Thread safety: every function here is reentrant and keeps no shared state.
//
// Example:
//   std::vector<uint8_t> jpeg = EncodeJpeg(rgb, width, height, {.quality = 90});
#ifndef FEEDLINE_SYNTH_ENCODE_H_
#define FEEDLINE_SYNTH_ENCODE_H_

#include <cstdint>
#include <span>
#include <vector>

namespace feedline::vision {

enum class ChromaSubsampling : uint8_t { k444, k422, k420 };

struct JpegEncodeOptions {
  int quality = 90;  // 1..100
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  bool progressive = false;
  // One luma component (the RGB input is converted to gray).
  bool grayscale = false;
  // Four components, CMYK inverted as Photoshop writes it (with an Adobe
  // marker); K is taken as 255 - max(R, G, B).
  bool cmyk = false;
  // With cmyk: store YCCK (Adobe transform 2) instead of plain CMYK.
  bool ycck = false;
};

// Encodes `rgb` (height rows of width * 3 bytes). Throws Error on bad
// arguments.
std::vector<uint8_t> EncodeJpeg(std::span<const uint8_t> rgb, int width, int height,
                                const JpegEncodeOptions& options = {});

struct PngEncodeOptions {
  // Components per pixel in the input and the file: 1 gray, 2 gray + alpha,
  // 3 RGB, 4 RGBA.
  int channels = 3;
  // 8 or 16. At 16 bits each 8-bit sample v is stored as v * 257.
  int bit_depth = 8;
  // Writes an indexed (palette) image; REQUIRES channels == 3 and at most 256
  // distinct colors.
  bool palette = false;
  bool interlaced = false;  // Adam7
};

// Encodes `pixels` (height rows of width * channels bytes). Throws Error on
// bad arguments.
std::vector<uint8_t> EncodePng(std::span<const uint8_t> pixels, int width, int height,
                               const PngEncodeOptions& options = {});

// Encodes `rgb` as WebP: lossy at `quality` (0..100), or lossless.
std::vector<uint8_t> EncodeWebp(std::span<const uint8_t> rgb, int width, int height,
                                float quality = 90.0f, bool lossless = false);

}  // namespace feedline::vision

#endif  // FEEDLINE_SYNTH_ENCODE_H_
