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

bool ParseJpegLayout(std::span<const uint8_t> jpeg, JpegLayout& layout) {
  layout = JpegLayout{};
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
    if (IsOtherFrameOrArithmetic(marker)) return false;
    if (pos + 2 > size) return false;
    const size_t length = static_cast<size_t>(Be16(p + pos));
    if (length < 2 || pos + length > size) return false;
    const uint8_t* segment = p + pos + 2;
    const size_t body = length - 2;
    if (marker == 0xC0 || marker == 0xC1) {
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

bool FindJpegRestarts(std::span<const uint8_t> jpeg, std::vector<uint32_t>& offsets) {
  offsets.clear();
  JpegLayout layout;
  if (!ParseJpegLayout(jpeg, layout) || jpeg.size() > UINT32_MAX) return false;
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  offsets.push_back(static_cast<uint32_t>(layout.entropy_start));
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
    if (marker != kRst0 + ((offsets.size() - 1) & 7)) return false;
    offsets.push_back(static_cast<uint32_t>(pos));
  }
  return static_cast<int64_t>(offsets.size()) == layout.intervals();
}

bool AddJpegRestarts(std::span<const uint8_t> jpeg, int rows, std::vector<uint8_t>& out,
                     std::vector<uint32_t>& offsets) {
  JpegLayout layout;
  if (rows < 1 || rows > 64 || !ParseJpegLayout(jpeg, layout)) return false;
  const int64_t interval = int64_t{layout.mcus_per_row} * rows;
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

bool AssembleJpegRows(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                      std::span<const uint32_t> offsets, int first_row,
                      std::vector<uint8_t>& out) {
  const int64_t interval = layout.restart_interval;
  if (interval <= 0 || first_row <= 0 || first_row >= layout.mcu_rows) return false;
  const int64_t first_mcu = int64_t{first_row} * layout.mcus_per_row;
  if (first_mcu % interval != 0) return false;
  if (static_cast<int64_t>(offsets.size()) != layout.intervals()) return false;
  const size_t first = static_cast<size_t>(first_mcu / interval);
  const uint8_t* p = jpeg.data();
  const size_t size = jpeg.size();
  // Every marker renumbered is checked to be the one the offsets promise.
  auto marker_before = [&](size_t i) -> bool {
    const size_t at = offsets[i];
    return at >= layout.entropy_start + 2 && at < size && at > offsets[i - 1] &&
           p[at - 2] == 0xFF && p[at - 1] == kRst0 + ((i - 1) & 7);
  };
  for (size_t i = first; i < offsets.size(); ++i) {
    if (!marker_before(i)) return false;
  }
  const size_t start = offsets[first];
  const size_t header = layout.entropy_start;
  out.resize(header + (size - start));
  std::memcpy(out.data(), p, header);
  const int height = layout.height - first_row * layout.mcu_height;
  out[layout.height_at] = static_cast<uint8_t>(height >> 8);
  out[layout.height_at + 1] = static_cast<uint8_t>(height & 0xFF);
  std::memcpy(out.data() + header, p + start, size - start);
  for (size_t i = first + 1; i < offsets.size(); ++i) {
    out[header + (offsets[i] - start) - 1] = static_cast<uint8_t>(kRst0 + ((i - 1 - first) & 7));
  }
  return true;
}

}  // namespace feedline::vision::internal
