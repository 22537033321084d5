// Image decoding: JPEG (libjpeg-turbo), PNG (libspng) and WebP (libwebp) to
// 8-bit RGB, recognized by their magic bytes, never by the file extension.
//
// Besides the plain full decode, a DecodeRequest can name the region of the
// image that is needed and allow DCT-domain downscaling: the JPEG decoder then
// skips the rows above and below the region, crops columns at iMCU granularity
// and decodes at 1/2, 1/4 or 1/8 scale. Every failure is a SampleError naming
// the source and the reason; no input makes the decoder crash.
//
// Thread safety: every function here is reentrant and keeps no shared state.
//
// Example:
//   std::vector<uint8_t> rgb;
//   DecodedImage image = DecodeImage(bytes, "cat.jpg", rgb);   // whole image
//   // rgb holds image.height rows of image.width * 3 bytes.
#ifndef FEEDLINE_VISION_DECODE_H_
#define FEEDLINE_VISION_DECODE_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "feedline/export.h"

namespace feedline::vision {

enum class ImageFormat : uint8_t { kUnknown, kJpeg, kPng, kWebp };

// "jpeg", "png", "webp" or "unknown".
FEEDLINE_EXPORT const char* ImageFormatName(ImageFormat format);

// The format announced by the first bytes of `data`, or kUnknown.
FEEDLINE_EXPORT ImageFormat DetectFormat(std::span<const uint8_t> data);

// Throws SampleError(FailureKind::kFormat, source, ...) unless `head` (the first bytes
// of a file, 12 are enough) begins like a JPEG, PNG or WebP file; the message
// is DecodeImage's ("empty file", "unsupported image format: GIF ...",
// "not a JPEG, PNG or WebP image (first bytes: ...)").
FEEDLINE_EXPORT void CheckImageSignature(std::span<const uint8_t> head, std::string_view source);

// Pillow's Image.MAX_IMAGE_PIXELS: larger images are refused (decompression
// bombs).
inline constexpr int64_t kDefaultMaxPixels = 89'478'485;

struct FEEDLINE_EXPORT DecodeOptions {
  // An image with more pixels than this is a SampleError, found from its
  // header before anything is allocated.
  int64_t max_pixels = kDefaultMaxPixels;
  // libjpeg reports some damage ("Corrupt JPEG data: 12 extraneous bytes")
  // as a warning and decodes on. When true such a warning is an error; when
  // false it is ignored. A truncated JPEG is always an error.
  bool jpeg_strict = true;
  // libjpeg's faster, slightly less accurate integer IDCT (JDCT_IFAST).
  bool jpeg_fast_idct = false;
};

// What an image's header says.
struct FEEDLINE_EXPORT ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int width = 0;
  int height = 0;
  // Components stored in the file: 1 gray, 2 gray + alpha, 3 color,
  // 4 CMYK / YCCK (JPEG) or RGBA (PNG, WebP).
  int channels = 0;
  // A progressive JPEG or an interlaced PNG.
  bool progressive = false;
};

// A rectangle of pixels: columns [x, x + width), rows [y, y + height).
struct FEEDLINE_EXPORT Rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  bool empty() const { return width <= 0 || height <= 0; }
};

// What part of the image a caller needs, and how small it may come back.
struct FEEDLINE_EXPORT DecodeRequest {
  // The region needed, in image pixels; empty means the whole image. It is
  // clamped to the image.
  Rect region;
  // The largest downscale factor the caller accepts: 1, 2, 4 or 8. The JPEG
  // decoder uses the largest DCT scale 1/s with s <= max_scale; the other
  // formats always decode at full scale.
  int max_scale = 1;
  // Where the restart intervals of a JPEG with a restart marker at the start
  // of its MCU rows begin (byte offsets, as FindJpegRestarts in
  // src/vision/jpeg_restarts.h lists them; the shard index keeps them). With
  // them a region that starts below the top decodes from the MCU row above
  // it on, skipping the entropy decoding of the rows above; the pixels are
  // those of the whole decode. Offsets that do not match the data are
  // ignored (the usual decode runs). Empty: none.
  std::span<const uint32_t> jpeg_restarts;
};

// Where the decoded pixels lie in the image. The pixels are RGB, 3 bytes per
// pixel, rows packed (stride width * 3). Decoded pixel (u, v) covers image
// columns [(x + u) * scale, (x + u + 1) * scale) and rows
// [(y + v) * scale, (y + v + 1) * scale) (the last ones clipped to the image).
// The decoded area contains the requested region; it may be a few columns
// wider (JPEG crops at iMCU boundaries).
struct FEEDLINE_EXPORT DecodedImage {
  ImageInfo info;  // of the whole image
  int width = 0;   // of the decoded pixels
  int height = 0;
  int x = 0;  // position of the first decoded pixel, in units of `scale`
  int y = 0;
  int scale = 1;  // 1, 2, 4 or 8
};

// Reads the header of an encoded image. Throws SampleError (see below) if
// the data is not a supported image or its header is damaged or too large.
FEEDLINE_EXPORT ImageInfo ReadImageInfo(std::span<const uint8_t> data, std::string_view source,
                                        const DecodeOptions& options = {});

// Decodes `data` into `pixels` (resized to width * height * 3 bytes; its
// capacity is kept, so reusing the vector avoids allocation). With the
// default request the whole image is decoded at full scale.
//
// Throws SampleError(reason, source, message) with reason
//   "format"    empty data, an unknown or unsupported format (GIF, BMP, ...),
//   "too_large" more pixels than options.max_pixels,
//   "decode"    a damaged or truncated file.
// With a region request, damage below the region may go unnoticed: the
// decoder stops reading after the region's last row.
FEEDLINE_EXPORT DecodedImage DecodeImage(std::span<const uint8_t> data, std::string_view source,
                                         std::vector<uint8_t>& pixels,
                                         const DecodeRequest& request = {},
                                         const DecodeOptions& options = {});

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_DECODE_H_
