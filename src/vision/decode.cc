#include "feedline/vision/decode.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "feedline/error.h"
#include "src/vision/decoders.h"

namespace feedline::vision {
namespace internal {

void ThrowImageError(FailureKind kind, std::string_view source, const std::string& message) {
  throw SampleError(kind, std::string(source), message);
}

void CheckPixelLimit(const ImageInfo& info, std::string_view source, const DecodeOptions& options) {
  const int64_t pixels = static_cast<int64_t>(info.width) * info.height;
  if (pixels > options.max_pixels) {
    ThrowImageError(FailureKind::kTooLarge, source,
                    std::string(ImageFormatName(info.format)) + " image is " +
                        std::to_string(info.width) + "x" + std::to_string(info.height) + " = " +
                        std::to_string(pixels) + " pixels, over the limit of " +
                        std::to_string(options.max_pixels));
  }
}

Rect ClampRegion(const Rect& region, int width, int height) {
  if (region.empty()) return Rect{0, 0, width, height};
  const int x0 = std::clamp(region.x, 0, width);
  const int y0 = std::clamp(region.y, 0, height);
  // 64-bit sums: a caller's x + width may not fit in an int.
  const int x1 = static_cast<int>(
      std::clamp<int64_t>(static_cast<int64_t>(region.x) + region.width, x0, width));
  const int y1 = static_cast<int>(
      std::clamp<int64_t>(static_cast<int64_t>(region.y) + region.height, y0, height));
  if (x1 == x0 || y1 == y0) return Rect{0, 0, width, height};  // nothing in common
  return Rect{x0, y0, x1 - x0, y1 - y0};
}

}  // namespace internal

namespace {

bool StartsWith(std::span<const uint8_t> data, std::string_view magic, size_t offset = 0) {
  return data.size() >= offset + magic.size() &&
         std::memcmp(data.data() + offset, magic.data(), magic.size()) == 0;
}

// Names formats we recognize but do not decode, for a useful message.
const char* UnsupportedFormatName(std::span<const uint8_t> data) {
  using std::string_view_literals::operator""sv;
  if (StartsWith(data, "GIF87a"sv) || StartsWith(data, "GIF89a"sv)) return "GIF";
  if (StartsWith(data, "BM"sv)) return "BMP";
  if (StartsWith(data, "II*\0"sv) || StartsWith(data, "MM\0*"sv)) return "TIFF";
  if (StartsWith(data, "ftyp"sv, 4)) return "HEIF/AVIF/MP4";
  if (StartsWith(data, "\0\0\0\x0cjP  "sv)) return "JPEG 2000";
  if (StartsWith(data, "\xff\x4f\xff\x51"sv)) return "JPEG 2000 codestream";
  if (StartsWith(data, "RIFF"sv)) return "RIFF (not WebP)";
  if (StartsWith(data, "%PDF"sv)) return "PDF";
  if (data.size() >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return "PNM";
  if (StartsWith(data, "<"sv)) return "text (HTML/XML/SVG)";
  return nullptr;
}

[[noreturn]] void ThrowUnknownFormat(std::span<const uint8_t> data, std::string_view source) {
  if (data.empty()) internal::ThrowImageError(FailureKind::kFormat, source, "empty file");
  if (const char* name = UnsupportedFormatName(data)) {
    internal::ThrowImageError(
        FailureKind::kFormat, source,
        std::string("unsupported image format: ") + name + " (supported: JPEG, PNG, WebP)");
  }
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(data.size(), 8); ++i) {
    char hex[4];
    std::snprintf(hex, sizeof(hex), "%02x ", data[i]);
    head += hex;
  }
  head.pop_back();
  internal::ThrowImageError(FailureKind::kFormat, source,
                            "not a JPEG, PNG or WebP image (first bytes: " + head + ")");
}

}  // namespace

const char* ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "jpeg";
    case ImageFormat::kPng:
      return "png";
    case ImageFormat::kWebp:
      return "webp";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

ImageFormat DetectFormat(std::span<const uint8_t> data) {
  using std::string_view_literals::operator""sv;
  if (StartsWith(data, "\xff\xd8\xff"sv)) return ImageFormat::kJpeg;
  if (StartsWith(data, "\x89PNG\r\n\x1a\n"sv)) return ImageFormat::kPng;
  if (StartsWith(data, "RIFF"sv) && StartsWith(data, "WEBP"sv, 8)) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

void CheckImageSignature(std::span<const uint8_t> head, std::string_view source) {
  if (DetectFormat(head) == ImageFormat::kUnknown) ThrowUnknownFormat(head, source);
}

ImageInfo ReadImageInfo(std::span<const uint8_t> data, std::string_view source,
                        const DecodeOptions& options) {
  switch (DetectFormat(data)) {
    case ImageFormat::kJpeg:
      return internal::ReadJpegInfo(data, source, options);
    case ImageFormat::kPng:
      return internal::ReadPngInfo(data, source, options);
    case ImageFormat::kWebp:
      return internal::ReadWebpInfo(data, source, options);
    case ImageFormat::kUnknown:
      break;
  }
  ThrowUnknownFormat(data, source);
}

DecodedImage DecodeImage(std::span<const uint8_t> data, std::string_view source,
                         std::vector<uint8_t>& pixels, const DecodeRequest& request,
                         const DecodeOptions& options) {
  internal::RequestSource requests;
  requests.fixed = &request;
  return internal::DecodePlanned(data, source, pixels, requests, options);
}

namespace internal {

DecodedImage DecodePlanned(std::span<const uint8_t> data, std::string_view source,
                           std::vector<uint8_t>& pixels, const RequestSource& requests,
                           const DecodeOptions& options) {
  switch (DetectFormat(data)) {
    case ImageFormat::kJpeg:
      return DecodeJpeg(data, source, pixels, requests, options);
    case ImageFormat::kPng:
      return DecodePng(data, source, pixels, requests, options);
    case ImageFormat::kWebp:
      return DecodeWebp(data, source, pixels, requests, options);
    case ImageFormat::kUnknown:
      break;
  }
  ThrowUnknownFormat(data, source);
}

}  // namespace internal

}  // namespace feedline::vision
