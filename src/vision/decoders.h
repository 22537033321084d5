// The per-format decoders behind DecodeImage / ReadImageInfo, and the checks
// they share.
#ifndef FEEDLINE_SRC_VISION_DECODERS_H_
#define FEEDLINE_SRC_VISION_DECODERS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/failure_kind.h"
#include "feedline/vision/decode.h"

namespace feedline::vision::internal {

// Where a decoder gets its DecodeRequest: a fixed one, or a function called
// with the header, so a caller that plans from the image size (the
// pipeline) does not parse the header twice.
struct RequestSource {
  using Planner = DecodeRequest (*)(const ImageInfo& info, void* context);

  const DecodeRequest* fixed = nullptr;
  Planner planner = nullptr;
  void* context = nullptr;
  // Leave the pixel buffer larger than the image instead of shrinking it:
  // growing a std::vector zero-fills, so a reused buffer that shrinks and
  // grows again writes hundreds of KB of zeros per image.
  bool grow_only = false;

  DecodeRequest Get(const ImageInfo& info) const {
    return planner != nullptr ? planner(info, context) : *fixed;
  }
};

// DecodeImage with the request chosen by `requests` once the header is read.
DecodedImage DecodePlanned(std::span<const uint8_t> data, std::string_view source,
                           std::vector<uint8_t>& pixels, const RequestSource& requests,
                           const DecodeOptions& options);

ImageInfo ReadJpegInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options);
DecodedImage DecodeJpeg(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const RequestSource& requests,
                        const DecodeOptions& options);

ImageInfo ReadPngInfo(std::span<const uint8_t> data, std::string_view source,
                      const DecodeOptions& options);
DecodedImage DecodePng(std::span<const uint8_t> data, std::string_view source,
                       std::vector<uint8_t>& pixels, const RequestSource& requests,
                       const DecodeOptions& options);

ImageInfo ReadWebpInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options);
DecodedImage DecodeWebp(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const RequestSource& requests,
                        const DecodeOptions& options);

// Resizes `buffer` to `size` bytes, or only grows it when `grow_only`.
inline void SizeBuffer(std::vector<uint8_t>& buffer, size_t size, bool grow_only) {
  if (!grow_only || buffer.size() < size) buffer.resize(size);
}

// Throws SampleError(kind, source, message).
[[noreturn]] void ThrowImageError(FailureKind kind, std::string_view source,
                                  const std::string& message);

// Throws SampleError(FailureKind::kTooLarge) if the image has more than
// options.max_pixels pixels.
void CheckPixelLimit(const ImageInfo& info, std::string_view source, const DecodeOptions& options);

// `region` clipped to a width x height image; the whole image if empty.
Rect ClampRegion(const Rect& region, int width, int height);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_DECODERS_H_
