// WebP through libwebp. libwebp crops natively (it decodes only the
// macroblocks a crop touches), so a region request is passed on.
#include <webp/decode.h>

#include <string>

#include "src/vision/decoders.h"

namespace feedline::vision::internal {
namespace {

const char* StatusName(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data (truncated file)";
  }
  return "unknown error";
}

ImageInfo ReadInfo(std::span<const uint8_t> data, std::string_view source) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(data.data(), data.size(), &features);
  if (status != VP8_STATUS_OK) {
    ThrowImageError("decode", source, std::string("corrupt WebP: ") + StatusName(status));
  }
  if (features.has_animation) {
    ThrowImageError("format", source, "animated WebP is not supported");
  }
  ImageInfo info;
  info.format = ImageFormat::kWebp;
  info.width = features.width;
  info.height = features.height;
  info.channels = features.has_alpha ? 4 : 3;
  return info;
}

}  // namespace

ImageInfo ReadWebpInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options) {
  ImageInfo info = ReadInfo(data, source);
  CheckPixelLimit(info, source, options);
  return info;
}

DecodedImage DecodeWebp(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const RequestSource& requests,
                        const DecodeOptions& options) {
  DecodedImage image;
  image.info = ReadInfo(data, source);
  CheckPixelLimit(image.info, source, options);
  const DecodeRequest request = requests.Get(image.info);
  Rect region = ClampRegion(request.region, image.info.width, image.info.height);
  // libwebp rounds the crop origin down to even coordinates (chroma is
  // subsampled); round it here so the origin we report is the real one.
  const int x1 = region.x + region.width;
  const int y1 = region.y + region.height;
  region.x &= ~1;
  region.y &= ~1;
  region.width = x1 - region.x;
  region.height = y1 - region.y;

  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) {
    ThrowImageError("decode", source, "libwebp version mismatch");
  }
  if (region.width != image.info.width || region.height != image.info.height) {
    config.options.use_cropping = 1;
    config.options.crop_left = region.x;
    config.options.crop_top = region.y;
    config.options.crop_width = region.width;
    config.options.crop_height = region.height;
  }
  const size_t stride = static_cast<size_t>(region.width) * 3;
  const size_t bytes = stride * static_cast<size_t>(region.height);
  SizeBuffer(pixels, bytes, requests.grow_only);
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(stride);
  config.output.u.RGBA.size = bytes;
  const VP8StatusCode status = WebPDecode(data.data(), data.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (status != VP8_STATUS_OK) {
    ThrowImageError("decode", source, std::string("corrupt WebP: ") + StatusName(status));
  }
  image.width = region.width;
  image.height = region.height;
  image.x = region.x;
  image.y = region.y;
  return image;
}

}  // namespace feedline::vision::internal
