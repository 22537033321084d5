// JPEG through libjpeg-turbo's jpeglib API.
//
// libjpeg reports errors by calling error_exit, which must not return; the
// usual C answer is setjmp/longjmp. All libjpeg calls happen in RunJpeg below,
// whose frame holds no object with a destructor, so the longjmp skips nothing
// that C++ would have to clean up. RunJpeg turns failures into a message and
// the caller throws.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

// clang-format off
// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>
#include <jerror.h>
#include <jpeglib.h>
// clang-format on

#include "feedline/error.h"
#include "src/vision/decoders.h"
#include "src/vision/jpeg_restarts.h"

namespace feedline::vision::internal {
namespace {

// Progressive JPEGs can carry thousands of tiny scans, each a pass over the
// coefficients: a cheap way to make a small file take minutes. Encoders emit
// about ten.
constexpr int kMaxScans = 1000;

// Columns decoded beyond each side of the requested region. libjpeg's fancy
// upsampling treats the edges of a cropped row as image edges, which changes
// the chroma of the outermost column; decoding a little more keeps the pixels
// the caller uses identical to a full decode.
constexpr int kColumnMargin = 4;

enum class Failure { kNone, kDecode, kFormat, kTooLarge };

struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  bool strict = true;
  char message[JMSG_LENGTH_MAX + 64];
};

struct JpegJob {
  // Inputs.
  std::span<const uint8_t> data;
  const RequestSource* requests = nullptr;  // null: read the header only
  DecodeRequest request;
  const DecodeOptions* options = nullptr;
  std::vector<uint8_t>* pixels = nullptr;
  // Holds the JPEG of the rows from a restart marker down (jpeg_restarts.h).
  std::vector<uint8_t>* window = nullptr;
  // Outputs.
  DecodedImage result;
  Failure failure = Failure::kNone;
  // libjpeg state.
  ErrorManager err;
  jpeg_progress_mgr progress;
  jpeg_decompress_struct cinfo;
};

[[noreturn]] void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) mean damaged data that libjpeg decodes around, filling
// gray. A truncated file is one of them; it must never pass as an image.
void OnMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace output
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (err->strict || cinfo->err->msg_code == JWRN_JPEG_EOF) {
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
  }
  ++cinfo->err->num_warnings;
}

void OnProgress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (dinfo->input_scan_number > kMaxScans) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "more than %d progressive scans", kMaxScans);
    std::longjmp(err->jump, 1);
  }
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// The window of MCUs worth decoding for decoded rows [y0, y1) and columns
// [x0, x1) at `scale` (JpegWindow in jpeg_restarts.h). Fancy chroma
// upsampling blends each pixel with its neighbours, and a JPEG's edges have
// none, so the window keeps a margin around the region: the row above and
// below, and kColumnMargin + 1 columns each side (the decode below widens
// the region by kColumnMargin). Every pixel of the region then sees the same
// neighbours as in the whole image and decodes to the same value.
JpegWindow RestartWindow(const JpegLayout& layout, int x0, int x1, int y0, int y1, int scale) {
  JpegWindow w{0, layout.mcu_rows, 0, layout.mcus_per_row};
  if (layout.row_starts() == 0) return w;  // no markers, or not at row starts
  if (const int rows = layout.rows_per_interval(); rows > 0) {
    // Intervals of whole rows: enter at the one above the region, read on to
    // the end (the decode stops after the region's last row).
    if (y0 >= 1) w.first_row = (y0 - 1) * scale / layout.mcu_height / rows * rows;
    return w;
  }
  const int k = layout.restart_interval;
  if (y0 >= 1) w.first_row = (y0 - 1) * scale / layout.mcu_height;
  w.end_row = std::min(layout.mcu_rows, (y1 + 1) * scale / layout.mcu_height + 1);
  const int margin = kColumnMargin + 1;
  if (x0 > margin) w.first_col = (x0 - margin) * scale / layout.mcu_width / k * k;
  const int right = (x1 + margin) * scale;  // image columns needed: [.., right)
  w.end_col = std::min(layout.mcus_per_row,
                       CeilDiv(CeilDiv(right, layout.mcu_width), k) * k);
  return w;
}

// Adobe CMYK to RGB in place (4 bytes in, 3 out, so the forward walk never
// overwrites input it still needs). Photoshop writes CMYK inverted (0 = full
// ink) and marks it with an Adobe marker; without the marker the values are
// plain ink amounts.
void CmykToRgb(uint8_t* p, size_t count, bool inverted) {
  for (size_t i = 0; i < count; ++i) {
    int c = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
    if (!inverted) {
      c = 255 - c;
      m = 255 - m;
      y = 255 - y;
      k = 255 - k;
    }
    p[3 * i] = static_cast<uint8_t>((c * k + 127) / 255);
    p[3 * i + 1] = static_cast<uint8_t>((m * k + 127) / 255);
    p[3 * i + 2] = static_cast<uint8_t>((y * k + 127) / 255);
  }
}

// Returns false on failure with job.failure and job.err.message set.
bool RunJpeg(JpegJob& job) {
  jpeg_decompress_struct& cinfo = job.cinfo;
  cinfo.err = jpeg_std_error(&job.err.pub);
  job.err.pub.error_exit = OnError;
  job.err.pub.emit_message = OnMessage;
  job.err.strict = job.options->jpeg_strict;
  if (setjmp(job.err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    if (job.failure == Failure::kNone) job.failure = Failure::kDecode;
    return false;
  }
  jpeg_create_decompress(&cinfo);
  job.progress.progress_monitor = OnProgress;
  cinfo.progress = &job.progress;
  jpeg_mem_src(&cinfo, job.data.data(), static_cast<unsigned long>(job.data.size()));
  jpeg_read_header(&cinfo, /*require_image=*/TRUE);

  ImageInfo& info = job.result.info;
  info.format = ImageFormat::kJpeg;
  info.width = static_cast<int>(cinfo.image_width);
  info.height = static_cast<int>(cinfo.image_height);
  info.channels = cinfo.num_components;
  info.progressive = cinfo.progressive_mode != 0;
  if (job.requests == nullptr ||
      static_cast<int64_t>(info.width) * info.height > job.options->max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    return true;  // the caller checks the limit and throws
  }
  job.request = job.requests->Get(info);
  int scale = 1;
  while (scale < 8 && scale * 2 <= job.request.max_scale) scale *= 2;

  // With restart offsets, decode only the window of MCUs around the region:
  // the JPEG of that window replaces the file (same headers, smaller frame).
  int row_offset = 0;  // image rows above the decoded JPEG
  int col_offset = 0;  // image columns left of it
  if (!job.request.jpeg_restarts.empty() && !info.progressive && job.window != nullptr) {
    JpegLayout layout;
    if (ParseJpegLayout(job.data, layout) && layout.width == info.width &&
        layout.height == info.height) {
      const Rect r = ClampRegion(job.request.region, info.width, info.height);
      const JpegWindow w = RestartWindow(layout, r.x / scale, CeilDiv(r.x + r.width, scale),
                                         r.y / scale, CeilDiv(r.y + r.height, scale), scale);
      const bool whole = w.first_row == 0 && w.end_row == layout.mcu_rows && w.first_col == 0 &&
                         w.end_col == layout.mcus_per_row;
      if (!whole &&
          AssembleJpegWindow(job.data, layout, job.request.jpeg_restarts, w, *job.window)) {
        jpeg_abort_decompress(&cinfo);
        jpeg_mem_src(&cinfo, job.window->data(), static_cast<unsigned long>(job.window->size()));
        jpeg_read_header(&cinfo, /*require_image=*/TRUE);
        row_offset = w.first_row * layout.mcu_height;
        col_offset = w.first_col * layout.mcu_width;
      }
    }
  }

  bool cmyk = false;
  switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
      cinfo.out_color_space = JCS_RGB;
      break;
    case JCS_CMYK:
    case JCS_YCCK:
      cinfo.out_color_space = JCS_CMYK;
      cmyk = true;
      break;
    default:
      std::snprintf(job.err.message, sizeof(job.err.message),
                    "unsupported JPEG color space (%d components)", cinfo.num_components);
      job.failure = Failure::kFormat;
      jpeg_destroy_decompress(&cinfo);
      return false;
  }
  cinfo.dct_method = job.options->jpeg_fast_idct ? JDCT_IFAST : JDCT_ISLOW;

  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned int>(scale);
  jpeg_start_decompress(&cinfo);

  // The region in scaled output pixels.
  const int out_w = static_cast<int>(cinfo.output_width);
  const int out_h = static_cast<int>(cinfo.output_height);
  Rect region = ClampRegion(job.request.region, info.width, info.height);
  region.y -= row_offset;
  region.x -= col_offset;
  int x0 = region.x / scale;
  int x1 = std::min(out_w, CeilDiv(region.x + region.width, scale));
  const int y0 = std::min(out_h - 1, region.y / scale);
  const int y1 = std::clamp(CeilDiv(region.y + region.height, scale), y0 + 1, out_h);
  x0 = std::max(0, x0 - kColumnMargin);
  x1 = std::min(out_w, x1 + kColumnMargin);

  JDIMENSION xoffset = static_cast<JDIMENSION>(x0);
  JDIMENSION width = static_cast<JDIMENSION>(x1 - x0);
  if (x0 > 0 || x1 < out_w) {
    // Moves xoffset left to an iMCU boundary and widens `width` to match.
    jpeg_crop_scanline(&cinfo, &xoffset, &width);
  }
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));

  const int rows = y1 - y0;
  const int channels = cmyk ? 4 : 3;
  const size_t stride = static_cast<size_t>(cinfo.output_width) * channels;
  SizeBuffer(*job.pixels, stride * static_cast<size_t>(rows), job.requests->grow_only);
  uint8_t* base = job.pixels->data();
  constexpr int kBatchRows = 16;
  JSAMPROW row_pointers[kBatchRows];
  while (static_cast<int>(cinfo.output_scanline) < y1) {
    const int done = static_cast<int>(cinfo.output_scanline) - y0;
    const int n = std::min(kBatchRows, rows - done);
    for (int k = 0; k < n; ++k) row_pointers[k] = base + stride * static_cast<size_t>(done + k);
    if (jpeg_read_scanlines(&cinfo, row_pointers, static_cast<JDIMENSION>(n)) == 0) {
      std::snprintf(job.err.message, sizeof(job.err.message), "decoder made no progress");
      jpeg_destroy_decompress(&cinfo);
      job.failure = Failure::kDecode;
      return false;
    }
  }
  // Reading to the end checks the rest of the file (a truncated tail is a
  // warning from jpeg_finish_decompress); a region decode stops early.
  if (cinfo.output_scanline == cinfo.output_height) jpeg_finish_decompress(&cinfo);
  const bool inverted = cinfo.saw_Adobe_marker != 0;

  job.result.width = static_cast<int>(cinfo.output_width);
  job.result.height = rows;
  job.result.x = static_cast<int>(xoffset) + col_offset / scale;
  job.result.y = y0 + row_offset / scale;
  job.result.scale = scale;
  jpeg_destroy_decompress(&cinfo);

  if (cmyk) {
    const size_t count = static_cast<size_t>(job.result.width) * static_cast<size_t>(rows);
    CmykToRgb(base, count, inverted);
    SizeBuffer(*job.pixels, count * 3, job.requests->grow_only);
  }
  return true;
}

void Run(JpegJob& job, std::string_view source) {
  std::memset(&job.cinfo, 0, sizeof(job.cinfo));
  bool ok;
  try {
    ok = RunJpeg(job);
  } catch (...) {  // std::bad_alloc from resizing the output
    jpeg_destroy_decompress(&job.cinfo);
    throw;
  }
  if (ok) return;
  const std::string message = job.err.message;
  switch (job.failure) {
    case Failure::kFormat:
      ThrowImageError(FailureKind::kFormat, source, message);
    case Failure::kTooLarge:
      ThrowImageError(FailureKind::kTooLarge, source, message);
    case Failure::kDecode:
    case Failure::kNone:
      break;
  }
  ThrowImageError(FailureKind::kDecode, source, "corrupt JPEG: " + message);
}

}  // namespace

ImageInfo ReadJpegInfo(std::span<const uint8_t> data, std::string_view source,
                       const DecodeOptions& options) {
  JpegJob job;
  job.data = data;
  job.options = &options;
  Run(job, source);
  CheckPixelLimit(job.result.info, source, options);
  return job.result.info;
}

DecodedImage DecodeJpeg(std::span<const uint8_t> data, std::string_view source,
                        std::vector<uint8_t>& pixels, const RequestSource& requests,
                        const DecodeOptions& options) {
  JpegJob job;
  job.data = data;
  job.requests = &requests;
  job.options = &options;
  job.pixels = &pixels;
  thread_local std::vector<uint8_t> window;
  job.window = &window;
  Run(job, source);
  CheckPixelLimit(job.result.info, source, options);
  return job.result;
}

}  // namespace feedline::vision::internal
