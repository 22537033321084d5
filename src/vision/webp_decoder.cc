// WebP through libwebp. libwebp crops natively (it decodes only the
// macroblocks a crop touches), so a region request is passed on.
// An animated WebP gives its first frame, composed on its canvas by
// libwebpdemux's WebPAnimDecoder as Pillow does (Pillow opens every WebP
// that way and shows frame 0); the region is cut from the whole canvas.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>
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

struct WebpHeader {
  ImageInfo info;
  bool animated = false;
};

WebpHeader ReadHeader(std::span<const uint8_t> data, std::string_view source) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(data.data(), data.size(), &features);
  if (status != VP8_STATUS_OK) {
    ThrowImageError(FailureKind::kDecode, source, std::string("corrupt WebP: ") + StatusName(status));
  }
  WebpHeader header;
  header.animated = features.has_animation != 0;
  ImageInfo& info = header.info;
  info.format = ImageFormat::kWebp;
  info.width = features.width;  // the canvas, for an animation
  info.height = features.height;
  info.channels = features.has_alpha ? 4 : 3;
  return header;
}

struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

// Decodes the first frame of an animated WebP and copies `region` of its
// canvas into `pixels` as RGB.
void DecodeFirstFrame(std::span<const uint8_t> data, std::string_view source, const Rect& region,
                      std::vector<uint8_t>& pixels, bool grow_only) {
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) {
    ThrowImageError(FailureKind::kDecode, source, "libwebpdemux version mismatch");
  }
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  const WebPData webp{data.data(), data.size()};
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> decoder(WebPAnimDecoderNew(&webp, &options));
  if (decoder == nullptr) {
    ThrowImageError(FailureKind::kDecode, source, "corrupt animated WebP: cannot parse its frames");
  }
  WebPAnimInfo animation;
  if (!WebPAnimDecoderGetInfo(decoder.get(), &animation) || animation.frame_count == 0) {
    ThrowImageError(FailureKind::kDecode, source, "corrupt animated WebP: no frames");
  }
  uint8_t* canvas = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(decoder.get(), &canvas, &timestamp) || canvas == nullptr) {
    ThrowImageError(FailureKind::kDecode, source, "corrupt animated WebP: cannot decode the first frame");
  }
  const size_t canvas_stride = static_cast<size_t>(animation.canvas_width) * 4;
  SizeBuffer(pixels, static_cast<size_t>(region.width) * region.height * 3, grow_only);
  uint8_t* out = pixels.data();
  for (int y = 0; y < region.height; ++y) {
    const uint8_t* in = canvas + (region.y + y) * canvas_stride + static_cast<size_t>(region.x) * 4;
    for (int x = 0; x < region.width; ++x, in += 4, out += 3) {
      out[0] = in[0];
      out[1] = in[1];
      out[2] = in[2];
    }
  }
}

}  // namespace

ImageInfo ReadWebpInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options) {
  ImageInfo info = ReadHeader(data, source).info;
  CheckPixelLimit(info, source, options);
  return info;
}

DecodedImage DecodeWebp(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const RequestSource& requests,
                        const DecodeOptions& options) {
  DecodedImage image;
  const WebpHeader header = ReadHeader(data, source);
  image.info = header.info;
  CheckPixelLimit(image.info, source, options);
  const DecodeRequest request = requests.Get(image.info);
  Rect region = ClampRegion(request.region, image.info.width, image.info.height);
  if (header.animated) {
    DecodeFirstFrame(data, source, region, pixels, requests.grow_only);
    image.width = region.width;
    image.height = region.height;
    image.x = region.x;
    image.y = region.y;
    return image;
  }
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
    ThrowImageError(FailureKind::kDecode, source, "libwebp version mismatch");
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
    ThrowImageError(FailureKind::kDecode, source, std::string("corrupt WebP: ") + StatusName(status));
  }
  image.width = region.width;
  image.height = region.height;
  image.x = region.x;
  image.y = region.y;
  return image;
}

}  // namespace feedline::vision::internal
