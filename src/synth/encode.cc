#include "feedline/synth/encode.h"

#include <png.h>
#include <webp/encode.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

// clang-format off
// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>
#include <jerror.h>
#include <jpeglib.h>
// clang-format on

#include "feedline/error.h"

namespace feedline::vision {
namespace {

void CheckSize(std::span<const uint8_t> pixels, int width, int height, int channels,
               const char* what) {
  if (width <= 0 || height <= 0) {
    throw Error(std::string(what) + ": width and height must be > 0, got " + std::to_string(width) +
                "x" + std::to_string(height));
  }
  const size_t needed = static_cast<size_t>(width) * static_cast<size_t>(height) * channels;
  if (pixels.size() < needed) {
    throw Error(std::string(what) + ": " + std::to_string(width) + "x" + std::to_string(height) +
                "x" + std::to_string(channels) + " needs " + std::to_string(needed) +
                " bytes, got " + std::to_string(pixels.size()));
  }
}

// ---- JPEG ----------------------------------------------------------------

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void OnJpegError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

struct JpegEncodeJob {
  const uint8_t* rows = nullptr;  // already in the input color space
  int width = 0;
  int height = 0;
  int components = 3;
  J_COLOR_SPACE in_space = JCS_RGB;
  const JpegEncodeOptions* options = nullptr;
  unsigned char* out = nullptr;  // malloc'd by jpeg_mem_dest
  unsigned long out_size = 0;
  JpegErrorManager err;
  jpeg_compress_struct cinfo;
};

// All libjpeg calls, under setjmp (no C++ objects in this frame).
bool RunJpegEncode(JpegEncodeJob& job) {
  jpeg_compress_struct& cinfo = job.cinfo;
  cinfo.err = jpeg_std_error(&job.err.pub);
  job.err.pub.error_exit = OnJpegError;
  if (setjmp(job.err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &job.out, &job.out_size);
  cinfo.image_width = static_cast<JDIMENSION>(job.width);
  cinfo.image_height = static_cast<JDIMENSION>(job.height);
  cinfo.input_components = job.components;
  cinfo.in_color_space = job.in_space;
  jpeg_set_defaults(&cinfo);
  if (job.in_space == JCS_CMYK && job.options->ycck) jpeg_set_colorspace(&cinfo, JCS_YCCK);
  jpeg_set_quality(&cinfo, job.options->quality, /*force_baseline=*/TRUE);
  if (job.in_space == JCS_RGB) {
    int h = 1, v = 1;
    if (job.options->subsampling == ChromaSubsampling::k422) h = 2;
    if (job.options->subsampling == ChromaSubsampling::k420) h = v = 2;
    cinfo.comp_info[0].h_samp_factor = h;
    cinfo.comp_info[0].v_samp_factor = v;
    for (int c = 1; c < 3; ++c) {
      cinfo.comp_info[c].h_samp_factor = 1;
      cinfo.comp_info[c].v_samp_factor = 1;
    }
  }
  if (job.options->progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(job.width) * job.components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(job.rows + stride * cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

// ---- PNG -----------------------------------------------------------------

struct PngEncodeJob {
  int width = 0;
  int height = 0;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlaced = false;
  png_bytepp rows = nullptr;
  const png_color* palette = nullptr;
  int palette_size = 0;
  std::vector<uint8_t>* out = nullptr;
  bool out_of_memory = false;
  char message[256] = {};
};

void OnPngWrite(png_structp png, png_bytep data, size_t size) {
  auto* job = static_cast<PngEncodeJob*>(png_get_io_ptr(png));
  try {
    job->out->insert(job->out->end(), data, data + size);
  } catch (...) {
    job->out_of_memory = true;
  }
  if (job->out_of_memory) png_error(png, "out of memory");
}

void OnPngFlush(png_structp) {}

void OnPngError(png_structp png, png_const_charp message) {
  auto* job = static_cast<PngEncodeJob*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof(job->message), "%s", message);
  png_longjmp(png, 1);
}

void OnPngWarning(png_structp, png_const_charp) {}

bool RunPngEncode(PngEncodeJob& job) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job, OnPngError, OnPngWarning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &job, OnPngWrite, OnPngFlush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(job.width), static_cast<png_uint_32>(job.height),
               job.bit_depth, job.color_type,
               job.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (job.palette != nullptr) png_set_PLTE(png, info, job.palette, job.palette_size);
  png_write_info(png, info);
  if (job.interlaced) png_set_interlace_handling(png);
  png_write_image(png, job.rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

std::vector<uint8_t> EncodeJpeg(std::span<const uint8_t> rgb, int width, int height,
                                const JpegEncodeOptions& options) {
  CheckSize(rgb, width, height, 3, "EncodeJpeg");
  if (options.quality < 1 || options.quality > 100) {
    throw Error("EncodeJpeg: quality must be in [1, 100], got " + std::to_string(options.quality));
  }
  if (options.grayscale && options.cmyk) {
    throw Error("EncodeJpeg: grayscale and cmyk are exclusive");
  }
  JpegEncodeJob job;
  job.width = width;
  job.height = height;
  job.options = &options;
  const size_t count = static_cast<size_t>(width) * static_cast<size_t>(height);
  std::vector<uint8_t> converted;
  if (options.grayscale) {
    converted.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const uint8_t* p = rgb.data() + 3 * i;
      converted[i] = static_cast<uint8_t>((299 * p[0] + 587 * p[1] + 114 * p[2] + 500) / 1000);
    }
    job.rows = converted.data();
    job.components = 1;
    job.in_space = JCS_GRAYSCALE;
  } else if (options.cmyk) {
    converted.resize(count * 4);
    for (size_t i = 0; i < count; ++i) {
      const int r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
      const int max = std::max(r, std::max(g, b));  // 255 - K ink
      uint8_t* q = converted.data() + 4 * i;
      // Inverted (Photoshop) storage: 255 - ink. 255 - C ink = 255 * r / max.
      q[0] = static_cast<uint8_t>(max == 0 ? 255 : (255 * r + max / 2) / max);
      q[1] = static_cast<uint8_t>(max == 0 ? 255 : (255 * g + max / 2) / max);
      q[2] = static_cast<uint8_t>(max == 0 ? 255 : (255 * b + max / 2) / max);
      q[3] = static_cast<uint8_t>(max);
    }
    job.rows = converted.data();
    job.components = 4;
    job.in_space = JCS_CMYK;
  } else {
    job.rows = rgb.data();
  }
  std::memset(&job.cinfo, 0, sizeof(job.cinfo));
  const bool ok = RunJpegEncode(job);
  std::vector<uint8_t> out;
  if (ok) out.assign(job.out, job.out + job.out_size);
  std::free(job.out);
  if (!ok) throw Error(std::string("EncodeJpeg: ") + job.err.message);
  return out;
}

std::vector<uint8_t> EncodePng(std::span<const uint8_t> pixels, int width, int height,
                               const PngEncodeOptions& options) {
  const int channels = options.channels;
  if (channels < 1 || channels > 4) {
    throw Error("EncodePng: channels must be 1..4, got " + std::to_string(channels));
  }
  if (options.bit_depth != 8 && options.bit_depth != 16) {
    throw Error("EncodePng: bit_depth must be 8 or 16, got " + std::to_string(options.bit_depth));
  }
  if (options.palette && (channels != 3 || options.bit_depth != 8)) {
    throw Error("EncodePng: a palette image needs channels == 3 and bit_depth == 8");
  }
  CheckSize(pixels, width, height, channels, "EncodePng");

  PngEncodeJob job;
  job.width = width;
  job.height = height;
  job.bit_depth = options.bit_depth;
  job.interlaced = options.interlaced;
  static constexpr int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                        PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  job.color_type = kColorTypes[channels - 1];

  const size_t count = static_cast<size_t>(width) * static_cast<size_t>(height);
  std::vector<uint8_t> data;
  std::vector<png_color> palette;
  size_t row_bytes;
  if (options.palette) {
    std::unordered_map<uint32_t, uint8_t> index;
    data.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const uint8_t* p = pixels.data() + 3 * i;
      const uint32_t key = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
      auto [it, added] = index.emplace(key, static_cast<uint8_t>(palette.size()));
      if (added) {
        if (palette.size() == 256) throw Error("EncodePng: more than 256 colors for a palette");
        palette.push_back(png_color{p[0], p[1], p[2]});
      }
      data[i] = it->second;
    }
    job.color_type = PNG_COLOR_TYPE_PALETTE;
    job.palette = palette.data();
    job.palette_size = static_cast<int>(palette.size());
    row_bytes = static_cast<size_t>(width);
  } else if (options.bit_depth == 16) {
    data.resize(count * channels * 2);
    for (size_t i = 0; i < count * channels; ++i) {
      const unsigned v = pixels[i] * 257u;  // big-endian samples
      data[2 * i] = static_cast<uint8_t>(v >> 8);
      data[2 * i + 1] = static_cast<uint8_t>(v);
    }
    row_bytes = static_cast<size_t>(width) * channels * 2;
  } else {
    data.assign(pixels.begin(), pixels.begin() + static_cast<ptrdiff_t>(count * channels));
    row_bytes = static_cast<size_t>(width) * channels;
  }
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) rows[y] = data.data() + row_bytes * y;
  job.rows = rows.data();
  std::vector<uint8_t> out;
  job.out = &out;
  if (!RunPngEncode(job)) {
    if (job.out_of_memory) throw std::bad_alloc();
    throw Error(std::string("EncodePng: ") + job.message);
  }
  return out;
}

std::vector<uint8_t> EncodeWebp(std::span<const uint8_t> rgb, int width, int height, float quality,
                                bool lossless) {
  CheckSize(rgb, width, height, 3, "EncodeWebp");
  uint8_t* encoded = nullptr;
  const size_t size = lossless
                          ? WebPEncodeLosslessRGB(rgb.data(), width, height, width * 3, &encoded)
                          : WebPEncodeRGB(rgb.data(), width, height, width * 3, quality, &encoded);
  if (size == 0) {
    WebPFree(encoded);
    throw Error("EncodeWebp: libwebp failed to encode a " + std::to_string(width) + "x" +
                std::to_string(height) + " image");
  }
  std::vector<uint8_t> out(encoded, encoded + size);
  WebPFree(encoded);
  return out;
}

}  // namespace feedline::vision
