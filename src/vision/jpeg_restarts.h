// Restart markers in baseline JPEGs, so that a crop decodes only its rows.
//
// A JPEG's entropy-coded data can only be entered at its start or right
// after a restart marker (RSTn), where the DC predictions reset and the
// bit stream is byte aligned. With a marker at the start of every MCU row,
// the rows from any MCU row down form, after the file's headers (with the
// height in the frame header lowered) and with their markers renumbered
// from RST0, a valid JPEG of just those rows, holding the same coefficients
// and so decoding to the same pixels. With a marker every few MCUs (a
// divisor of the MCUs per row), the segments of a window of rows and
// columns form a valid JPEG of just that window the same way. The decoder
// uses that to skip the entropy decoding of everything around a crop.
//
//   AddJpegRestarts    pack time: rewrites a baseline JPEG losslessly (its
//                      DCT coefficients copied, Huffman tables optimized)
//                      with restart markers, and lists where the intervals
//                      that begin an MCU row start.
//   FindJpegRestarts   lists where those intervals of a JPEG start.
//   AssembleJpegWindow decode time: the JPEG of a window of MCU rows (and
//                      columns, when the intervals are shorter than a row).
//
// Only single-scan, Huffman-coded, 8-bit baseline or extended-sequential
// JPEGs with 1 or 3 components qualify; arithmetic-coded, CMYK and other
// multi-scan files are left alone (the functions return false).
// AddJpegRestarts also takes a progressive (Huffman-coded, 8-bit, 1 or 3
// components) JPEG when asked to, and writes it as a baseline one: the
// same coefficients in one sequential scan.
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
                             // (the width follows it)
  size_t entropy_start = 0;  // first byte after the start-of-scan header

  // The number of restart intervals (1 without markers).
  int64_t intervals() const;
  // Restart intervals per MCU row when a row holds a whole number of them
  // (a window may then cut columns), else 0.
  int intervals_per_row() const;
  // MCU rows per restart interval when an interval holds whole rows, else 0.
  int rows_per_interval() const;
  // The number of intervals that begin an MCU row (FindJpegRestarts' list),
  // or 0 if intervals neither divide nor span whole rows.
  int64_t row_starts() const;
};

// Restart markers to add: a marker every `mcus` MCUs, the divisor of the
// MCUs per row nearest to it (within half to twice; else whole rows), or
// with `mcus` 0 a marker every `rows` MCU rows.
struct JpegRestartOptions {
  int rows = 1;  // 1 to 64
  int mcus = 0;  // 0 or 1 to 1024
  // Rewrite progressive JPEGs as baseline ones too (else they are refused).
  // A crop of a progressive JPEG needs every scan of the whole image
  // decoded; as baseline with markers it decodes only its window.
  bool progressive_to_baseline = false;
};

// A window of MCUs: rows [first_row, end_row), columns [first_col, end_col).
struct JpegWindow {
  int first_row = 0;
  int end_row = 0;
  int first_col = 0;
  int end_col = 0;
};

// Parses the markers up to the start of scan. False if the file does not
// qualify (see above) or its headers are damaged.
bool ParseJpegLayout(std::span<const uint8_t> jpeg, JpegLayout& layout);

// The offset of the first byte of every restart interval that begins an
// MCU row (the first right after the start-of-scan header, each other right
// after its RSTn marker), in order, into `offsets`. False if the file does
// not qualify, its markers are not RST0, RST1, ... in order with exactly
// layout.intervals() intervals, or its intervals neither divide nor span
// whole rows.
bool FindJpegRestarts(std::span<const uint8_t> jpeg, std::vector<uint32_t>& offsets);

// Rewrites `jpeg` into `out` with restart markers as `options` says, the
// coefficients unchanged, the APPn and COM markers copied, and fills
// `offsets` as FindJpegRestarts does for `out`. False (and `out` left
// unspecified) if the file does not qualify or cannot be read. A
// progressive file qualifies with options.progressive_to_baseline when its
// scans give every coefficient in full (libjpeg would otherwise smooth the
// blocks of the unfinished ones when decoding it, and the baseline file
// would not decode to the same pixels); `*was_progressive`, when given,
// says whether it was one.
bool AddJpegRestarts(std::span<const uint8_t> jpeg, const JpegRestartOptions& options,
                     std::vector<uint8_t>& out, std::vector<uint32_t>& offsets,
                     bool* was_progressive = nullptr);

// The JPEG of `window` of `jpeg`: its headers with the frame's size made the
// window's, then the window's entropy data, its markers renumbered from
// RST0. `offsets` is FindJpegRestarts' list. The window's rows must start
// and (unless it reaches the last row) end at interval boundaries; with
// intervals of whole rows its columns must be all of them and it must reach
// the last row. False if the window does not fit the intervals or `offsets`
// does not describe `jpeg` (every marker used is checked).
bool AssembleJpegWindow(std::span<const uint8_t> jpeg, const JpegLayout& layout,
                        std::span<const uint32_t> offsets, const JpegWindow& window,
                        std::vector<uint8_t>& out);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_JPEG_RESTARTS_H_
