// Restart markers in baseline JPEGs, so that a crop decodes only its rows.
//
// A JPEG's entropy-coded data can only be entered at its start or right
// after a restart marker (RSTn), where the DC predictions reset and the
// bit stream is byte aligned. With a marker at the start of every MCU row,
// the rows from any MCU row down form, after the file's headers (with the
// height in the frame header lowered) and with their markers renumbered
// from RST0, a valid JPEG of just those rows, holding the same coefficients
// and so decoding to the same pixels. The decoder uses that to skip the
// entropy decoding of every row above a crop.
//
//   AddJpegRestarts   pack time: rewrites a baseline JPEG losslessly (its
//                     DCT coefficients copied, Huffman tables optimized)
//                     with a restart marker every N MCU rows, and lists
//                     where each restart interval starts.
//   FindJpegRestarts  lists where the restart intervals of a JPEG start.
//   AssembleJpegRows  decode time: the JPEG of the MCU rows from one down.
//
// Only single-scan, Huffman-coded, 8-bit baseline or extended-sequential
// JPEGs with 1 or 3 components qualify; progressive, arithmetic-coded,
// CMYK and multi-scan files are left alone (the functions return false).
//
// Thread safety: reentrant, no shared state.
#ifndef FEEDLINE_SRC_VISION_JPEG_RESTARTS_H_
#define FEEDLINE_SRC_VISION_JPEG_RESTARTS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace feedline::vision::internal {

// What the headers of a qualifying JPEG say about its MCU grid.
struct JpegLayout {
  int width = 0;
  int height = 0;
  int mcu_width = 0;  // pixels
  int mcu_height = 0;
  int mcus_per_row = 0;
  int mcu_rows = 0;
  int restart_interval = 0;  // MCUs; 0: no restart markers
  size_t height_at = 0;      // offset of the frame header's 16-bit height
  size_t entropy_start = 0;  // first byte after the start-of-scan header

  // The number of restart intervals (1 without markers).
  int64_t intervals() const;
};

// Parses the markers up to the start of scan. False if the file does not
// qualify (see above) or its headers are damaged.
bool ParseJpegLayout(std::span<const uint8_t> jpeg, JpegLayout& layout);

// The offset of the first byte of every restart interval (the first right
// after the start-of-scan header, each other right after its RSTn marker)
// into `offsets`. False if the file does not qualify or its markers are not
// RST0, RST1, ... in order with exactly layout.intervals() intervals.
bool FindJpegRestarts(std::span<const uint8_t> jpeg, std::vector<uint32_t>& offsets);

// Rewrites `jpeg` into `out` with a restart marker every `rows` MCU rows
// (1 to 64), the coefficients unchanged, the APPn and COM markers copied,
// and fills `offsets` as FindJpegRestarts does for `out`. False (and `out`
// left unspecified) if the file does not qualify or cannot be read.
bool AddJpegRestarts(std::span<const uint8_t> jpeg, int rows, std::vector<uint8_t>& out,
                     std::vector<uint32_t>& offsets);

// The JPEG of MCU rows [first_row, layout.mcu_rows) of `jpeg`: its headers
// with the height lowered by first_row * mcu_height, then the entropy data
// from the restart interval that starts first_row, markers renumbered. False
// if `offsets` does not describe `jpeg` (the marker before each interval
// used is checked) or first_row does not start an interval.
bool AssembleJpegRows(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                      std::span<const uint32_t> offsets, int first_row,
                      std::vector<uint8_t>& out);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_JPEG_RESTARTS_H_
