// PNG through libspng: every bit depth and color type (palette, gray, alpha,
// 16-bit) comes out as 8-bit RGB. Alpha is dropped, as PIL's convert("RGB")
// does; 16-bit samples keep their high byte.
#include <spng.h>

#include <memory>
#include <new>
#include <string>

#include "src/vision/decoders.h"

namespace feedline::vision::internal {
namespace {

// Ancillary chunks (text, ICC profiles, EXIF) are skipped, but a hostile file
// could still declare huge ones; cap what libspng will buffer.
constexpr size_t kMaxChunkBytes = size_t{64} << 20;

struct SpngFree {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using SpngContext = std::unique_ptr<spng_ctx, SpngFree>;

[[noreturn]] void ThrowSpngError(std::string_view source, int code) {
  ThrowImageError(FailureKind::kDecode, source, std::string("corrupt PNG: ") + spng_strerror(code));
}

// Opens `data` and reads its header into `info`.
SpngContext Open(std::span<const uint8_t> data, std::string_view source, ImageInfo* info) {
  SpngContext ctx(spng_ctx_new(0));
  if (ctx == nullptr) throw std::bad_alloc();
  spng_set_chunk_limits(ctx.get(), kMaxChunkBytes, kMaxChunkBytes);
  if (int rc = spng_set_png_buffer(ctx.get(), data.data(), data.size())) {
    ThrowSpngError(source, rc);
  }
  spng_ihdr ihdr{};
  if (int rc = spng_get_ihdr(ctx.get(), &ihdr)) ThrowSpngError(source, rc);
  info->format = ImageFormat::kPng;
  info->width = static_cast<int>(ihdr.width);
  info->height = static_cast<int>(ihdr.height);
  switch (ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE:
      info->channels = 1;
      break;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA:
      info->channels = 2;
      break;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA:
      info->channels = 4;
      break;
    default:
      info->channels = 3;
      break;  // truecolor, indexed
  }
  info->progressive = ihdr.interlace_method != 0;
  return ctx;
}

}  // namespace

ImageInfo ReadPngInfo(std::span<const uint8_t> data, std::string_view source,
                      const DecodeOptions& options) {
  ImageInfo info;
  Open(data, source, &info);
  CheckPixelLimit(info, source, options);
  return info;
}

DecodedImage DecodePng(std::span<const uint8_t> data, std::string_view source,
                       std::vector<uint8_t>& pixels, const RequestSource& requests,
                       const DecodeOptions& options) {
  DecodedImage image;
  SpngContext ctx = Open(data, source, &image.info);
  CheckPixelLimit(image.info, source, options);
  const ImageInfo& info = image.info;
  const Rect region = ClampRegion(requests.Get(info).region, info.width, info.height);
  // Rows come out in order (unless interlaced): those above the region are
  // decoded into one spare row (each is needed to unfilter the next), those
  // below it are never decompressed. Columns cannot be skipped.
  const bool whole = info.progressive || (region.y == 0 && region.height == info.height);
  const int first = whole ? 0 : region.y;
  const int last = whole ? info.height : region.y + region.height;
  size_t bytes = 0;
  if (int rc = spng_decoded_image_size(ctx.get(), SPNG_FMT_RGB8, &bytes)) {
    ThrowSpngError(source, rc);
  }
  const size_t stride = static_cast<size_t>(info.width) * 3;
  if (whole) {
    SizeBuffer(pixels, bytes, requests.grow_only);
    if (int rc = spng_decode_image(ctx.get(), pixels.data(), bytes, SPNG_FMT_RGB8, 0)) {
      ThrowSpngError(source, rc);
    }
    // libspng stops when the pixels are complete, before the CRC of the last
    // image data chunk; reading the chunks after it checks that CRC and finds
    // a file cut short after its pixels.
    if (int rc = spng_decode_chunks(ctx.get())) ThrowSpngError(source, rc);
  } else {
    // The region's rows, then one spare row for those above it.
    const size_t rows = static_cast<size_t>(last - first);
    SizeBuffer(pixels, (rows + 1) * stride, requests.grow_only);
    uint8_t* spare = pixels.data() + rows * stride;
    if (int rc = spng_decode_image(ctx.get(), nullptr, 0, SPNG_FMT_RGB8,
                                   SPNG_DECODE_PROGRESSIVE)) {
      ThrowSpngError(source, rc);
    }
    for (int y = 0; y < last; ++y) {
      uint8_t* row = y < first ? spare : pixels.data() + static_cast<size_t>(y - first) * stride;
      const int rc = spng_decode_row(ctx.get(), row, stride);
      // SPNG_EOI comes with the last row of the image; like a region JPEG
      // decode, a decode that stops early does not check the file's tail.
      if (rc != 0 && !(rc == SPNG_EOI && y == info.height - 1)) ThrowSpngError(source, rc);
    }
    // A region down to the last row read every row: check the tail as the
    // whole-image decode does.
    if (last == info.height) {
      if (int rc = spng_decode_chunks(ctx.get())) ThrowSpngError(source, rc);
    }
  }
  image.width = info.width;
  image.height = last - first;
  image.y = first;
  return image;
}

}  // namespace feedline::vision::internal
