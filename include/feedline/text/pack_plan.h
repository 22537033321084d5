// Packing: which pieces of which documents fill each fixed-length row.
//
// PlanPacking turns documents (their lengths, in the order an epoch visits
// them) into rows of at most seq_len tokens and max_segments pieces. It reads
// lengths only, never tokens, so a whole epoch is planned up front: the rows
// are a pure function of the order and the options, whatever loads them
// afterwards (any number of workers, a resume at any row).
//
// Strategies (Grain's FirstFit/BestFit packers, Megatron's concatenation):
//   kBestFit      each document goes to the open row with the least room that
//                 still holds it; a new row when none does.
//   kFirstFit     each document goes to the oldest open row that holds it.
//   kConcatSplit  documents end to end, cut every seq_len tokens: a document
//                 may continue in the next row; no padding but the last row.
// Both fit strategies keep at most open_rows rows open: when another must
// open, the fullest open row is closed first. A row is closed as soon as it
// is full or holds max_segments pieces; the rest close at the end, oldest
// first. Rows are numbered in the order they close.
//
// A document longer than seq_len (for the fit strategies) is kSplit: cut into
// full rows of its own plus a remainder packed like any document; kTruncate:
// its first seq_len tokens; kDrop: left out (counted in dropped_*). Empty
// documents contribute nothing. Every token of every document that is not
// dropped or truncated away is in exactly one piece.
//
// Thread safety: PlanPacking is a pure function; a PackPlan is a value.
//
// Example:
//   PackOptions options;
//   options.seq_len = 2048;
//   PackPlan plan = PlanPacking(order, lengths, options);
//   for (const PackPiece& piece : plan.row(0)) Copy(piece.document, piece.offset, piece.length);
#ifndef FEEDLINE_TEXT_PACK_PLAN_H_
#define FEEDLINE_TEXT_PACK_PLAN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feedline/export.h"

namespace feedline::text {

enum class PackStrategy { kBestFit, kFirstFit, kConcatSplit };
enum class LongDocuments { kSplit, kTruncate, kDrop };

// "best_fit", "first_fit", "concat_split"; Parse* throws Error naming `text`.
FEEDLINE_EXPORT const char* PackStrategyName(PackStrategy strategy);
FEEDLINE_EXPORT PackStrategy ParsePackStrategy(const std::string& text);
// "split", "truncate", "drop".
FEEDLINE_EXPORT const char* LongDocumentsName(LongDocuments policy);
FEEDLINE_EXPORT LongDocuments ParseLongDocuments(const std::string& text);

struct FEEDLINE_EXPORT PackOptions {
  // The largest seq_len: a row's arrays take 28 bytes a token (input_ids,
  // labels and position_ids int64, segment_ids int32), 1.75 GiB at this.
  static constexpr int64_t kMaxSeqLen = int64_t{1} << 26;
  // The most rows the fit strategies keep open.
  static constexpr int64_t kMaxOpenRows = int64_t{1} << 20;

  int64_t seq_len = 2048;  // tokens per row, 1 to kMaxSeqLen
  PackStrategy strategy = PackStrategy::kBestFit;
  int64_t max_segments = 0;  // pieces per row, 1 to seq_len; 0: no cap (seq_len)
  int64_t open_rows = 64;    // fit strategies: rows open at once, 1 to kMaxOpenRows
  LongDocuments long_documents = LongDocuments::kSplit;

  // Throws Error naming the first option out of range.
  void Check() const;
  // max_segments, or seq_len when it is 0.
  int64_t segment_cap() const { return max_segments > 0 ? max_segments : seq_len; }
};

// `length` tokens of `document` from token `offset`.
struct FEEDLINE_EXPORT PackPiece {
  int64_t document;
  int64_t offset;
  int64_t length;
};

// Row r is pieces[row_offsets[r], row_offsets[r + 1]).
struct FEEDLINE_EXPORT PackPlan {
  std::vector<PackPiece> pieces;
  std::vector<int64_t> row_offsets{0};
  int64_t tokens = 0;             // in all pieces
  int64_t dropped_documents = 0;  // kDrop
  int64_t dropped_tokens = 0;     // kDrop, and what kTruncate cut off

  int64_t num_rows() const { return static_cast<int64_t>(row_offsets.size()) - 1; }
  std::span<const PackPiece> row(int64_t r) const {
    return std::span<const PackPiece>(pieces).subspan(
        static_cast<size_t>(row_offsets[static_cast<size_t>(r)]),
        static_cast<size_t>(row_offsets[static_cast<size_t>(r) + 1] -
                            row_offsets[static_cast<size_t>(r)]));
  }
  // The share of the rows' seq_len * num_rows slots that hold no token.
  double PaddingFraction(int64_t seq_len) const;
};

// Plans the rows of documents visited in `order` (document ids, each indexing
// `lengths`). Throws Error for bad options, IndexError for an id outside
// lengths, Error for a negative length.
FEEDLINE_EXPORT PackPlan PlanPacking(std::span<const int64_t> order,
                                     std::span<const int64_t> lengths, const PackOptions& options);

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_PACK_PLAN_H_
