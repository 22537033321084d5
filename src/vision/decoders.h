// The per-format decoders behind DecodeImage / ReadImageInfo, and the checks
// they share.
#ifndef FEEDLINE_SRC_VISION_DECODERS_H_
#define FEEDLINE_SRC_VISION_DECODERS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/vision/decode.h"

namespace feedline::vision::internal {

ImageInfo ReadJpegInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options);
DecodedImage DecodeJpeg(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const DecodeRequest& request,
                        const DecodeOptions& options);

ImageInfo ReadPngInfo(std::span<const uint8_t> data, std::string_view source,
                      const DecodeOptions& options);
DecodedImage DecodePng(std::span<const uint8_t> data, std::string_view source,
                       std::vector<uint8_t>& pixels, const DecodeRequest& request,
                       const DecodeOptions& options);

ImageInfo ReadWebpInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options);
DecodedImage DecodeWebp(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const DecodeRequest& request,
                        const DecodeOptions& options);

// Throws SampleError(reason, source, message).
[[noreturn]] void ThrowImageError(const char* reason, std::string_view source,
                                  const std::string& message);

// Throws SampleError("too_large") if the image has more than
// options.max_pixels pixels.
void CheckPixelLimit(const ImageInfo& info, std::string_view source,
                     const DecodeOptions& options);

// `region` clipped to a width x height image; the whole image if empty.
Rect ClampRegion(const Rect& region, int width, int height);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_DECODERS_H_
