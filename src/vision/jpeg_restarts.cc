// Restart markers in baseline JPEGs (jpeg_restarts.h).
//
// The rewrite goes through libjpeg's coefficient API, as `jpegtran -restart`
// does: jpeg_read_coefficients, jpeg_copy_critical_parameters, a restart
// interval, jpeg_write_coefficients. libjpeg reports errors by longjmp; all
// libjpeg calls happen in RunTranscode, whose frame holds no object with a
// destructor.
#include "src/vision/jpeg_restarts.h"

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// clang-format off
// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

namespace feedline::vision::internal {
namespace {

constexpr uint8_t kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kDri = 0xDD, kRst0 = 0xD0;

int Be16(const uint8_t* p) { return (p[0] << 8) | p[1]; }

bool IsRst(uint8_t marker) { return marker >= kRst0 && marker <= kRst0 + 7; }

// Start-of-frame markers other than SOF0 / SOF1 (progressive, lossless,
// hierarchical, arithmetic); DAC (0xCC) means arithmetic coding too.
bool IsOtherFrameOrArithmetic(uint8_t marker) {
  return (marker >= 0xC2 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8);
}

struct TranscodeError {
  jpeg_error_mgr pub;  // first member: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
};

[[noreturn]] void OnError(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<TranscodeError*>(cinfo->err)->jump, 1);
}

// Any warning (damaged data libjpeg would decode around) refuses the file:
// it is then packed unchanged and fails when decoded, as before.
void OnMessage(j_common_ptr cinfo, int level) {
  if (level < 0) std::longjmp(reinterpret_cast<TranscodeError*>(cinfo->err)->jump, 1);
}

struct TranscodeJob {
  std::span<const uint8_t> in;
  unsigned int restart_interval = 0;
  TranscodeError err;
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;
  unsigned char* buffer = nullptr;  // malloc'ed by jpeg_mem_dest
  unsigned long size = 0;
};

bool IsMarkerNamed(jpeg_saved_marker_ptr m, int code, const char* name, size_t length) {
  return m->marker == code && m->data_length >= length && std::memcmp(m->data, name, length) == 0;
}

// Whether a progressive file's scans have given every coefficient of every
// component in full: libjpeg then decodes it without block smoothing, as
// it decodes the baseline file holding the same coefficients.
bool CoefficientsComplete(const jpeg_decompress_struct& src) {
  if (src.coef_bits == nullptr) return false;
  for (int c = 0; c < src.num_components; ++c) {
    for (int k = 0; k < DCTSIZE2; ++k) {
      if (src.coef_bits[c][k] != 0) return false;
    }
  }
  return true;
}

bool RunTranscode(TranscodeJob& job) {
  std::memset(&job.src, 0, sizeof(job.src));
  std::memset(&job.dst, 0, sizeof(job.dst));
  job.src.err = jpeg_std_error(&job.err.pub);
  job.dst.err = &job.err.pub;
  job.err.pub.error_exit = OnError;
  job.err.pub.emit_message = OnMessage;
  if (setjmp(job.err.jump)) {
    jpeg_destroy_compress(&job.dst);
    jpeg_destroy_decompress(&job.src);
    return false;
  }
  jpeg_create_decompress(&job.src);
  jpeg_create_compress(&job.dst);
  jpeg_mem_src(&job.src, job.in.data(), static_cast<unsigned long>(job.in.size()));
  jpeg_save_markers(&job.src, JPEG_COM, 0xFFFF);
  for (int m = 0; m < 16; ++m) jpeg_save_markers(&job.src, JPEG_APP0 + m, 0xFFFF);
  jpeg_read_header(&job.src, TRUE);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&job.src);
  if (job.src.progressive_mode && !CoefficientsComplete(job.src)) {
    jpeg_destroy_compress(&job.dst);
    jpeg_destroy_decompress(&job.src);
    return false;
  }
  jpeg_copy_critical_parameters(&job.src, &job.dst);
  job.dst.restart_interval = job.restart_interval;
  job.dst.restart_in_rows = 0;
  // Optimal tables: the markers cost a few bytes per row, optimized tables
  // usually save more than that over the encoder's standard ones.
  job.dst.optimize_coding = TRUE;
  jpeg_mem_dest(&job.dst, &job.buffer, &job.size);
  jpeg_write_coefficients(&job.dst, coefficients);
  // The markers as jpegtran -copy all does: all but the JFIF and Adobe
  // markers the compressor has just written itself.
  for (jpeg_saved_marker_ptr m = job.src.marker_list; m != nullptr; m = m->next) {
    if (job.dst.write_JFIF_header && IsMarkerNamed(m, JPEG_APP0, "JFIF", 5)) continue;
    if (job.dst.write_Adobe_marker && IsMarkerNamed(m, JPEG_APP0 + 14, "Adobe", 5)) continue;
    jpeg_write_marker(&job.dst, m->marker, m->data, m->data_length);
  }
  jpeg_finish_compress(&job.dst);
  jpeg_finish_decompress(&job.src);
  jpeg_destroy_compress(&job.dst);
  jpeg_destroy_decompress(&job.src);
  return true;
}

}  // namespace

int64_t JpegLayout::intervals() const {
  const int64_t mcus = int64_t{mcus_per_row} * mcu_rows;
  if (restart_interval <= 0) return 1;
  return (mcus + restart_interval - 1) / restart_interval;
}

int JpegLayout::intervals_per_row() const {
  if (restart_interval <= 0 || restart_interval > mcus_per_row) return 0;
  return mcus_per_row % restart_interval == 0 ? mcus_per_row / restart_interval : 0;
}

int JpegLayout::rows_per_interval() const {
  if (restart_interval <= 0 || mcus_per_row <= 0) return 0;
  return restart_interval % mcus_per_row == 0 ? restart_interval / mcus_per_row : 0;
}

int64_t JpegLayout::row_starts() const {
  if (const int rows = rows_per_interval(); rows > 0) return (mcu_rows + rows - 1) / rows;
  if (intervals_per_row() > 0) return mcu_rows;
  return 0;
}

namespace {

// ParseJpegLayout's work. With `allow_progressive`, a progressive
// Huffman-coded frame (SOF2) is taken too: `progressive` is set, the MCU
// grid is the one a sequential scan of the same frame has, and the scans
// are not checked (entropy_start is then the first scan's data).
bool ParseHeaders(std::span<const uint8_t> jpeg, JpegLayout& layout, bool allow_progressive,
                  bool& progressive) {
  layout = JpegLayout{};
  progressive = false;
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  if (size < 4 || p[0] != 0xFF || p[1] != kSoi) return false;
  size_t pos = 2;
  int components = 0;
  int h_max = 1, v_max = 1;
  int h[3] = {}, v[3] = {};
  while (true) {
    if (pos >= size || p[pos] != 0xFF) return false;
    while (pos < size && p[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= size) return false;
    const uint8_t marker = p[pos++];
    if (marker == kSoi || marker == kEoi || IsRst(marker) || marker == 0x01 || marker == 0x00) {
      return false;
    }
    const bool progressive_frame = marker == 0xC2 && allow_progressive;
    if (IsOtherFrameOrArithmetic(marker) && !progressive_frame) return false;
    if (pos + 2 > size) return false;
    const size_t length = static_cast<size_t>(Be16(p + pos));
    if (length < 2 || pos + length > size) return false;
    const uint8_t* segment = p + pos + 2;
    const size_t body = length - 2;
    if (marker == 0xC0 || marker == 0xC1 || progressive_frame) {
      progressive = progressive_frame;
      if (components != 0 || body < 6 || segment[0] != 8) return false;
      layout.height = Be16(segment + 1);
      layout.width = Be16(segment + 3);
      components = segment[5];
      if (layout.height == 0 || layout.width == 0) return false;  // DNL: not handled
      if ((components != 1 && components != 3) || body != 6 + 3 * size_t(components)) {
        return false;
      }
      for (int c = 0; c < components; ++c) {
        h[c] = segment[7 + 3 * c] >> 4;
        v[c] = segment[7 + 3 * c] & 15;
        if (h[c] < 1 || h[c] > 4 || v[c] < 1 || v[c] > 4) return false;
        h_max = std::max(h_max, h[c]);
        v_max = std::max(v_max, v[c]);
      }
      if (components == 1 && (h[0] != 1 || v[0] != 1)) return false;
      layout.height_at = pos + 3;
    } else if (marker == kDri) {
      if (body != 2) return false;
      layout.restart_interval = Be16(segment);
    } else if (marker == kSos) {
      if (components == 0 || body < 1) return false;
      if (progressive) {
        layout.entropy_start = pos + length;
        break;
      }
      const int in_scan = segment[0];
      if (in_scan != components || body != 4 + 2 * size_t(in_scan)) return false;
      const uint8_t* tail = segment + 1 + 2 * in_scan;
      if (tail[0] != 0 || tail[1] != 63 || tail[2] != 0) return false;  // one sequential scan
      layout.entropy_start = pos + length;
      break;
    }
    pos += length;
  }
  layout.mcu_width = 8 * h_max;
  layout.mcu_height = 8 * v_max;
  layout.mcus_per_row = (layout.width + layout.mcu_width - 1) / layout.mcu_width;
  layout.mcu_rows = (layout.height + layout.mcu_height - 1) / layout.mcu_height;
  return true;
}

}  // namespace

bool ParseJpegLayout(std::span<const uint8_t> jpeg, JpegLayout& layout) {
  bool progressive = false;
  return ParseHeaders(jpeg, layout, /*allow_progressive=*/false, progressive);
}

bool FindJpegRestarts(std::span<const uint8_t> jpeg, std::vector<uint32_t>& offsets) {
  offsets.clear();
  JpegLayout layout;
  if (!ParseJpegLayout(jpeg, layout) || jpeg.size() > UINT32_MAX) return false;
  if (layout.row_starts() == 0) return false;
  const int per_row = std::max(1, layout.intervals_per_row());
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  offsets.push_back(static_cast<uint32_t>(layout.entropy_start));
  int64_t interval = 0;  // the interval being scanned
  size_t pos = layout.entropy_start;
  while (true) {
    const void* found = std::memchr(p + pos, 0xFF, size - pos);
    if (found == nullptr) return false;  // no end of image
    pos = static_cast<size_t>(static_cast<const uint8_t*>(found) - p) + 1;
    while (pos < size && p[pos] == 0xFF) ++pos;
    if (pos >= size) return false;
    const uint8_t marker = p[pos++];
    if (marker == 0x00) continue;  // a stuffed 0xFF data byte
    if (marker == kEoi) break;
    if (!IsRst(marker)) return false;  // another scan, DNL, ...
    if (marker != kRst0 + (interval & 7)) return false;
    ++interval;
    if (interval % per_row == 0) offsets.push_back(static_cast<uint32_t>(pos));
  }
  return interval + 1 == layout.intervals() &&
         static_cast<int64_t>(offsets.size()) == layout.row_starts();
}

bool AddJpegRestarts(std::span<const uint8_t> jpeg, const JpegRestartOptions& options,
                     std::vector<uint8_t>& out, std::vector<uint32_t>& offsets,
                     bool* was_progressive) {
  JpegLayout layout;
  bool progressive = false;
  if (was_progressive != nullptr) *was_progressive = false;
  if (options.rows < 1 || options.rows > 64 || options.mcus < 0 || options.mcus > 1024 ||
      !ParseHeaders(jpeg, layout, options.progressive_to_baseline, progressive)) {
    return false;
  }
  if (was_progressive != nullptr) *was_progressive = progressive;
  int64_t interval = int64_t{layout.mcus_per_row} * options.rows;
  if (options.mcus > 0) {
    // The divisor of the row nearest to the wish, so that every row holds
    // whole intervals and a window can cut columns; none near: whole rows.
    interval = layout.mcus_per_row;
    int best_distance = options.mcus;  // only divisors within half to twice
    for (int d = std::max(1, options.mcus / 2); d <= std::min(layout.mcus_per_row, 2 * options.mcus);
         ++d) {
      if (layout.mcus_per_row % d != 0) continue;
      const int distance = std::abs(d - options.mcus);
      if (distance < best_distance || (distance == best_distance && d > interval)) {
        best_distance = distance;
        interval = d;
      }
    }
  }
  if (interval > 65535) return false;  // the marker's 16-bit field
  TranscodeJob job;
  job.in = jpeg;
  job.restart_interval = static_cast<unsigned int>(interval);
  const bool ok = RunTranscode(job);
  if (ok) out.assign(job.buffer, job.buffer + job.size);
  std::free(job.buffer);
  if (!ok) return false;
  JpegLayout written;
  return FindJpegRestarts(out, offsets) && ParseJpegLayout(out, written) &&
         written.restart_interval == interval && written.width == layout.width &&
         written.height == layout.height;
}

namespace {

void PutBe16(std::vector<uint8_t>& out, size_t at, int value) {
  out[at] = static_cast<uint8_t>(value >> 8);
  out[at + 1] = static_cast<uint8_t>(value & 0xFF);
}

// Intervals of whole rows: the headers, then everything from the interval
// that starts the window's first row, markers renumbered.
bool AssembleTail(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                  std::span<const uint32_t> offsets, size_t first, std::vector<uint8_t>& out) {
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  for (size_t i = std::max<size_t>(first, 1); i < offsets.size(); ++i) {
    const size_t at = offsets[i];
    if (at < layout.entropy_start + 2 || at >= size || at <= offsets[i - 1] ||
        p[at - 2] != 0xFF || p[at - 1] != kRst0 + ((i - 1) & 7)) {
      return false;
    }
  }
  const size_t start = offsets[first];
  if (start < layout.entropy_start || start >= size) return false;
  const size_t header = layout.entropy_start;
  // clear + insert: the buffer is reused, and resize would zero it first.
  out.clear();
  out.insert(out.end(), p, p + header);
  out.insert(out.end(), p + start, p + size);
  for (size_t i = first + 1; i < offsets.size(); ++i) {
    out[header + (offsets[i] - start) - 1] = static_cast<uint8_t>(kRst0 + ((i - 1 - first) & 7));
  }
  return true;
}

// Intervals that divide rows: for each row of the window, its intervals
// over the window's columns, found by walking the row's markers from its
// start, each followed by a new marker.
bool AssembleSegments(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                      std::span<const uint32_t> offsets, const JpegWindow& window,
                      std::vector<uint8_t>& out) {
  const int k = layout.restart_interval;
  const int per_row = layout.intervals_per_row();
  if (window.first_col % k != 0 || (window.end_col % k != 0 && window.end_col != layout.mcus_per_row)) {
    return false;
  }
  const int64_t i0 = window.first_col / k;
  const int64_t i1 = (window.end_col + k - 1) / k;
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  out.resize(layout.entropy_start);
  std::memcpy(out.data(), p, layout.entropy_start);
  int written_markers = 0;
  bool first_segment = true;
  for (int r = window.first_row; r < window.end_row; ++r) {
    size_t pos = offsets[static_cast<size_t>(r)];
    const int64_t row_interval = int64_t{r} * per_row;
    if (pos < layout.entropy_start || pos >= size) return false;
    if (r > 0 && (pos < 2 || p[pos - 2] != 0xFF || p[pos - 1] != kRst0 + ((row_interval - 1) & 7))) {
      return false;
    }
    for (int64_t idx = 0; idx < i1; ++idx) {
      const bool last_of_image = r == layout.mcu_rows - 1 && idx == per_row - 1;
      const uint8_t want = last_of_image ? kEoi : static_cast<uint8_t>(kRst0 + ((row_interval + idx) & 7));
      const size_t begin = pos;
      size_t end = 0;
      while (true) {
        const void* found = std::memchr(p + pos, 0xFF, size - pos);
        if (found == nullptr) return false;
        const size_t at = static_cast<size_t>(static_cast<const uint8_t*>(found) - p);
        if (at + 1 >= size) return false;
        if (p[at + 1] == 0x00) {
          pos = at + 2;
          continue;
        }
        if (p[at + 1] != want) return false;
        end = at;
        pos = at + 2;
        break;
      }
      if (idx < i0) continue;
      if (!first_segment) {
        out.push_back(0xFF);
        out.push_back(static_cast<uint8_t>(kRst0 + (written_markers++ & 7)));
      }
      first_segment = false;
      out.insert(out.end(), p + begin, p + end);
    }
  }
  out.push_back(0xFF);
  out.push_back(kEoi);
  return true;
}

}  // namespace

bool AssembleJpegWindow(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                        std::span<const uint32_t> offsets, const JpegWindow& window,
                        std::vector<uint8_t>& out) {
  if (layout.restart_interval <= 0 || static_cast<int64_t>(offsets.size()) != layout.row_starts() ||
      offsets.empty()) {
    return false;
  }
  if (window.first_row < 0 || window.first_row >= window.end_row ||
      window.end_row > layout.mcu_rows || window.first_col < 0 ||
      window.first_col >= window.end_col || window.end_col > layout.mcus_per_row) {
    return false;
  }
  bool ok;
  if (const int rows = layout.rows_per_interval(); rows > 0) {
    if (window.first_row % rows != 0 || window.end_row != layout.mcu_rows ||
        window.first_col != 0 || window.end_col != layout.mcus_per_row) {
      return false;
    }
    ok = AssembleTail(jpeg, layout, offsets, static_cast<size_t>(window.first_row / rows), out);
  } else {
    ok = AssembleSegments(jpeg, layout, offsets, window, out);
  }
  if (!ok) return false;
  const int bottom = window.end_row == layout.mcu_rows ? layout.height
                                                       : window.end_row * layout.mcu_height;
  const int right = window.end_col == layout.mcus_per_row ? layout.width
                                                          : window.end_col * layout.mcu_width;
  PutBe16(out, layout.height_at, bottom - window.first_row * layout.mcu_height);
  PutBe16(out, layout.height_at + 2, right - window.first_col * layout.mcu_width);
  return true;
}

}  // namespace feedline::vision::internal
