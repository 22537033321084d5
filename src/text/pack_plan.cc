#include "feedline/text/pack_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/error.h"

namespace feedline::text {

const char* PackStrategyName(PackStrategy strategy) {
  switch (strategy) {
    case PackStrategy::kBestFit: return "best_fit";
    case PackStrategy::kFirstFit: return "first_fit";
    case PackStrategy::kConcatSplit: return "concat_split";
  }
  return "?";
}

PackStrategy ParsePackStrategy(const std::string& text) {
  for (PackStrategy s : {PackStrategy::kBestFit, PackStrategy::kFirstFit,
                         PackStrategy::kConcatSplit}) {
    if (text == PackStrategyName(s)) return s;
  }
  throw Error(
      "PackOptions: strategy must be \"best_fit\", \"first_fit\" or \"concat_split\", got \"" +
      text + "\"");
}

const char* LongDocumentsName(LongDocuments policy) {
  switch (policy) {
    case LongDocuments::kSplit: return "split";
    case LongDocuments::kTruncate: return "truncate";
    case LongDocuments::kDrop: return "drop";
  }
  return "?";
}

LongDocuments ParseLongDocuments(const std::string& text) {
  for (LongDocuments p : {LongDocuments::kSplit, LongDocuments::kTruncate, LongDocuments::kDrop}) {
    if (text == LongDocumentsName(p)) return p;
  }
  throw Error("PackOptions: long_documents must be \"split\", \"truncate\" or \"drop\", got \"" +
              text + "\"");
}

void PackOptions::Check() const {
  if (seq_len < 1 || seq_len > kMaxSeqLen) {
    throw Error("PackOptions: seq_len must be between 1 and " + std::to_string(kMaxSeqLen) +
                " (a row's arrays take 28 bytes a token), got " + std::to_string(seq_len));
  }
  if (max_segments < 0 || max_segments > seq_len) {
    throw Error("PackOptions: max_segments must be between 1 and seq_len (" +
                std::to_string(seq_len) + "), or 0 for no cap, got " +
                std::to_string(max_segments));
  }
  if (open_rows < 1 || open_rows > kMaxOpenRows) {
    throw Error("PackOptions: open_rows must be between 1 and " + std::to_string(kMaxOpenRows) +
                ", got " + std::to_string(open_rows));
  }
}

double PackPlan::PaddingFraction(int64_t seq_len) const {
  const double slots = static_cast<double>(num_rows()) * static_cast<double>(seq_len);
  return slots == 0 ? 0.0 : 1.0 - static_cast<double>(tokens) / slots;
}

namespace {

// Builds the plan row by row: pieces of the row being closed are appended.
class PlanWriter {
 public:
  explicit PlanWriter(PackPlan* plan) : plan_(plan) {}

  void CloseRow(const std::vector<PackPiece>& pieces) {
    for (const PackPiece& p : pieces) {
      plan_->pieces.push_back(p);
      plan_->tokens += p.length;
    }
    plan_->row_offsets.push_back(static_cast<int64_t>(plan_->pieces.size()));
  }

 private:
  PackPlan* plan_;
};

// The open rows of the fit strategies, by age (`rows_`) and by room left
// (`by_room_`, ties to the oldest), so that best fit is a lower_bound, first
// fit a scan in age order and "close the fullest" the first by room.
class OpenRows {
 public:
  OpenRows(const PackOptions& options, PlanWriter* writer)
      : seq_len_(options.seq_len),
        cap_(options.segment_cap()),
        open_rows_(options.open_rows),
        best_fit_(options.strategy == PackStrategy::kBestFit),
        writer_(writer) {}

  void Place(const PackPiece& piece) {
    int64_t age = Find(piece.length);
    if (age < 0) {
      if (static_cast<int64_t>(rows_.size()) >= open_rows_) Close(by_room_.begin()->second);
      age = next_age_++;
      rows_[age] = Row{};
      by_room_.insert({seq_len_, age});
    }
    Row& row = rows_[age];
    by_room_.erase({seq_len_ - row.used, age});
    row.pieces.push_back(piece);
    row.used += piece.length;
    if (row.used == seq_len_ || static_cast<int64_t>(row.pieces.size()) == cap_) {
      Close(age, /*indexed=*/false);
    } else {
      by_room_.insert({seq_len_ - row.used, age});
    }
  }

  void CloseAll() {
    while (!rows_.empty()) Close(rows_.begin()->first);
  }

 private:
  struct Row {
    std::vector<PackPiece> pieces;
    int64_t used = 0;
  };

  // The open row that takes `length` more tokens, or -1.
  int64_t Find(int64_t length) const {
    if (best_fit_) {
      auto it = by_room_.lower_bound({length, std::numeric_limits<int64_t>::min()});
      return it == by_room_.end() ? -1 : it->second;
    }
    for (const auto& [age, row] : rows_) {
      if (seq_len_ - row.used >= length) return age;
    }
    return -1;
  }

  void Close(int64_t age, bool indexed = true) {
    auto it = rows_.find(age);
    if (indexed) by_room_.erase({seq_len_ - it->second.used, age});
    writer_->CloseRow(it->second.pieces);
    rows_.erase(it);
  }

  const int64_t seq_len_;
  const int64_t cap_;
  const int64_t open_rows_;
  const bool best_fit_;
  PlanWriter* writer_;
  std::map<int64_t, Row> rows_;                     // by age (opening order)
  std::set<std::pair<int64_t, int64_t>> by_room_;   // (room left, age)
  int64_t next_age_ = 0;
};

// Documents end to end, cut at every seq_len tokens (and at max_segments).
class ConcatRows {
 public:
  ConcatRows(const PackOptions& options, PlanWriter* writer)
      : seq_len_(options.seq_len), cap_(options.segment_cap()), writer_(writer) {}

  void Append(int64_t document, int64_t length) {
    int64_t offset = 0;
    while (offset < length) {
      if (static_cast<int64_t>(row_.size()) == cap_) Close();
      const int64_t take = std::min(length - offset, seq_len_ - used_);
      row_.push_back({document, offset, take});
      used_ += take;
      offset += take;
      if (used_ == seq_len_) Close();
    }
  }

  void Close() {
    if (row_.empty()) return;
    writer_->CloseRow(row_);
    row_.clear();
    used_ = 0;
  }

 private:
  const int64_t seq_len_;
  const int64_t cap_;
  PlanWriter* writer_;
  std::vector<PackPiece> row_;
  int64_t used_ = 0;
};

}  // namespace

PackPlan PlanPacking(std::span<const int64_t> order, std::span<const int64_t> lengths,
                     const PackOptions& options) {
  options.Check();
  PackPlan plan;
  PlanWriter writer(&plan);
  OpenRows open(options, &writer);
  ConcatRows concat(options, &writer);
  const bool concat_split = options.strategy == PackStrategy::kConcatSplit;
  const int64_t seq_len = options.seq_len;
  for (int64_t document : order) {
    CheckIndex(document, static_cast<int64_t>(lengths.size()));
    const int64_t length = lengths[static_cast<size_t>(document)];
    if (length < 0) {
      throw Error("PlanPacking: document " + std::to_string(document) + " has a negative length (" +
                  std::to_string(length) + ")");
    }
    if (length == 0) continue;
    int64_t kept = length;
    if (length > seq_len && options.long_documents == LongDocuments::kDrop) {
      ++plan.dropped_documents;
      plan.dropped_tokens += length;
      continue;
    }
    if (length > seq_len && options.long_documents == LongDocuments::kTruncate) {
      plan.dropped_tokens += length - seq_len;
      kept = seq_len;
    }
    if (concat_split) {
      concat.Append(document, kept);
      continue;
    }
    // A fit strategy: a document's full rows (all of one of exactly seq_len
    // tokens) go out as rows of their own, which closes no open row early;
    // what is left is placed like a short document.
    int64_t offset = 0;
    for (; kept - offset >= seq_len; offset += seq_len) {
      writer.CloseRow({PackPiece{document, offset, seq_len}});
    }
    if (kept - offset > 0) open.Place({document, offset, kept - offset});
  }
  concat.Close();
  open.CloseAll();
  return plan;
}

}  // namespace feedline::text
