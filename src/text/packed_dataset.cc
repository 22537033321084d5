#include "feedline/text/packed_dataset.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/text/token_dataset.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::text {

namespace {

constexpr int64_t kIgnoreLabel = -100;

// A document's tokens as int64, read from any 1-D integer field.
template <typename T>
void Widen(const Tensor& field, std::vector<int64_t>& out) {
  const T* values = static_cast<const T*>(field.raw());
  out.assign(values, values + field.elements());
}

void ReadTokens(const Tensor& field, std::vector<int64_t>& out) {
  switch (field.dtype()) {
    case DType::kI64: {
      // Token ids fit in 32 bits wherever feedline keeps them (TokenDataset
      // stores them so); a wider one is a corrupt document, not an id.
      Widen<int64_t>(field, out);
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] < std::numeric_limits<int32_t>::min() ||
            out[i] > std::numeric_limits<int32_t>::max()) {
          throw Error("holds token " + std::to_string(out[i]) + " at " + std::to_string(i) +
                      ", which does not fit in 32 bits (as TokenDataset refuses it)");
        }
      }
      return;
    }
    case DType::kI32: Widen<int32_t>(field, out); return;
    case DType::kI16: Widen<int16_t>(field, out); return;
    case DType::kU16: Widen<uint16_t>(field, out); return;
    case DType::kI8: Widen<int8_t>(field, out); return;
    case DType::kU8: Widen<uint8_t>(field, out); return;
    default: throw Error("is not of an integer dtype");
  }
}

// Where a document read through Get lands: kept per thread between rows, so
// that reading allocates nothing once warm, one per nesting depth (a packed
// dataset over a dataset that reads another through a PackedDataset).
class DocumentBuffer {
 public:
  DocumentBuffer() {
    if (buffers().size() <= depth()) buffers().push_back(std::make_unique<Buffer>());
    buffer_ = buffers()[depth()].get();
    ++depth();
  }
  ~DocumentBuffer() { --depth(); }
  DocumentBuffer(const DocumentBuffer&) = delete;
  DocumentBuffer& operator=(const DocumentBuffer&) = delete;

  Sample& sample() { return buffer_->sample; }
  std::vector<int64_t>& tokens() { return buffer_->tokens; }

 private:
  struct Buffer {
    Sample sample;
    std::vector<int64_t> tokens;
  };
  static std::vector<std::unique_ptr<Buffer>>& buffers() {
    thread_local std::vector<std::unique_ptr<Buffer>> kept;
    return kept;
  }
  static size_t& depth() {
    thread_local size_t nesting = 0;
    return nesting;
  }
  Buffer* buffer_;
};

}  // namespace

struct PackedDataset::DocumentOrder {
  feedline::internal::Mutex mu;
  // piece_ends[k]: the documents' order's length after the order's first k
  // rows (empty: no order told).
  std::vector<int64_t> piece_ends GUARDED_BY(mu);
};

PackedDataset::PackedDataset(std::shared_ptr<const Dataset> documents,
                             std::shared_ptr<const PackSchedule> schedule,
                             PackedRowOptions options)
    : documents_(std::move(documents)),
      tokens_(dynamic_cast<const TokenDataset*>(documents_.get())),
      schedule_(std::move(schedule)),
      options_(std::move(options)),
      document_order_(std::make_shared<DocumentOrder>()) {
  if (documents_ == nullptr) throw Error("PackedDataset: the document dataset must not be null");
  if (schedule_ == nullptr) throw Error("PackedDataset: the schedule must not be null");
  if (schedule_->num_documents() != documents_->size()) {
    throw Error("PackedDataset: the schedule has " + std::to_string(schedule_->num_documents()) +
                " document lengths, the dataset " + std::to_string(documents_->size()) +
                " documents");
  }
  if (tokens_ != nullptr && tokens_->field() != options_.tokens_field) tokens_ = nullptr;
  size_ = schedule_->max_rows();
}

std::vector<FieldSpec> PackedDataset::FixedFields() const {
  const int64_t seq_len = schedule_->options().seq_len;
  return {{"input_ids", DType::kI64, Shape{seq_len}},
          {"labels", DType::kI64, Shape{seq_len}},
          {"position_ids", DType::kI64, Shape{seq_len}},
          {"segment_ids", DType::kI32, Shape{seq_len}},
          {"cu_seqlens", DType::kI32, Shape{schedule_->options().segment_cap() + 1}}};
}

void PackedDataset::EpochOrder(std::span<const int64_t> order) const {
  std::vector<int64_t> documents;
  std::vector<int64_t> piece_ends;
  std::shared_ptr<const PackPlan> plan;
  if (!order.empty() && tokens_ == nullptr) {  // documents in memory need no plan
    try {
      plan = schedule_->Rows(schedule_->planned_epoch());  // planned already: kept
    } catch (const std::exception&) {
      plan = nullptr;  // the loader reports it when it asks for the rows
    }
  }
  if (plan != nullptr && plan->num_rows() > 0) {
    piece_ends.reserve(order.size() + 1);
    piece_ends.push_back(0);
    for (const int64_t index : order) {
      if (index >= 0 && index < size_) {
        for (const PackPiece& piece : plan->row(index % plan->num_rows())) {
          documents.push_back(piece.document);
        }
      }
      piece_ends.push_back(static_cast<int64_t>(documents.size()));
    }
  }
  {
    feedline::internal::MutexLock lock(&document_order_->mu);
    document_order_->piece_ends.swap(piece_ends);
  }
  documents_->EpochOrder(documents);
}

void PackedDataset::EpochProgress(int64_t delivered) const {
  int64_t pieces = 0;
  {
    feedline::internal::MutexLock lock(&document_order_->mu);
    const std::vector<int64_t>& ends = document_order_->piece_ends;
    if (ends.empty()) return;
    const auto last = static_cast<int64_t>(ends.size()) - 1;
    pieces = ends[static_cast<size_t>(std::clamp<int64_t>(delivered, 0, last))];
  }
  documents_->EpochProgress(pieces);
}

std::string PackedDataset::Source(int64_t index) const {
  return "packed row " + std::to_string(index);
}

void PackedDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size_);
  const std::shared_ptr<const PackPlan> plan = schedule_->Rows(ctx.epoch());
  if (plan->num_rows() == 0) {
    throw IndexError("PackedDataset: epoch " + std::to_string(ctx.epoch()) +
                     " packs into no rows (no tokens to pack)");
  }
  // Past the epoch's rows (a substitute the error policy drew): a real row.
  index %= plan->num_rows();
  const int64_t seq_len = schedule_->options().seq_len;
  const int64_t cap = schedule_->options().segment_cap();
  int64_t* input_ids = out.Allocate("input_ids", DType::kI64, Shape{seq_len}).data<int64_t>();
  int64_t* labels = out.Allocate("labels", DType::kI64, Shape{seq_len}).data<int64_t>();
  int64_t* positions = out.Allocate("position_ids", DType::kI64, Shape{seq_len}).data<int64_t>();
  int32_t* segments = out.Allocate("segment_ids", DType::kI32, Shape{seq_len}).data<int32_t>();
  int32_t* cu_seqlens = out.Allocate("cu_seqlens", DType::kI32, Shape{cap + 1}).data<int32_t>();

  DocumentBuffer buffer;
  Sample& document = buffer.sample();
  std::vector<int64_t>& widened = buffer.tokens();

  const std::span<const PackPiece> pieces = plan->row(index);
  int64_t pos = 0;
  bool previous_ended_document = false;
  cu_seqlens[0] = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const PackPiece& piece = pieces[k];
    // The document's tokens, whole: the label after a cut is the token
    // that follows the piece.
    std::span<const int32_t> narrow;
    std::span<const int64_t> wide;
    int64_t doc_len = 0;
    if (tokens_ != nullptr) {
      narrow = tokens_->document(piece.document);
      doc_len = static_cast<int64_t>(narrow.size());
    } else {
      document.Clear();
      documents_->Get(piece.document, document, ctx);
      const Tensor* field = document.Find(options_.tokens_field);
      const std::string where = "document " + std::to_string(piece.document) + " (" +
                                documents_->Source(piece.document) + ")";
      if (field == nullptr) {
        throw SampleError(FailureKind::kSchema, where,
                          "has no field \"" + options_.tokens_field + "\" to pack", index);
      }
      if (field->shape().rank() != 1) {
        throw SampleError(FailureKind::kSchema, where,
                          "field \"" + options_.tokens_field + "\" has shape " +
                              field->shape().ToString() + ", not one dimension",
                          index);
      }
      try {
        ReadTokens(*field, widened);
      } catch (const Error& e) {
        throw SampleError(FailureKind::kSchema, where,
                          "field \"" + options_.tokens_field + "\" " + e.what(), index);
      }
      wide = widened;
      doc_len = static_cast<int64_t>(widened.size());
    }
    // A document must have the length it was planned with, either way: one
    // longer would lose its tokens past the length silently.
    const int64_t planned = schedule_->length(piece.document);
    if (doc_len != planned) {
      throw SampleError(FailureKind::kSchema, documents_->Source(piece.document),
                        "document " + std::to_string(piece.document) + " has " +
                            std::to_string(doc_len) + " tokens, but its length said " +
                            std::to_string(planned),
                        index);
    }
    auto token = [&](int64_t i) -> int64_t {
      return tokens_ != nullptr ? narrow[static_cast<size_t>(i)] : wide[static_cast<size_t>(i)];
    };
    for (int64_t t = 0; t < piece.length; ++t) {
      input_ids[pos + t] = token(piece.offset + t);
      positions[pos + t] = t;
      segments[pos + t] = static_cast<int32_t>(k + 1);
    }
    if (options_.shift_labels) {
      // Without boundary masks the previous document's last token predicts
      // this piece's first.
      if (k > 0 && previous_ended_document && !options_.mask_boundaries) {
        labels[pos - 1] = input_ids[pos];
      }
      for (int64_t t = 0; t + 1 < piece.length; ++t) labels[pos + t] = token(piece.offset + t + 1);
      const int64_t end = piece.offset + piece.length;
      labels[pos + piece.length - 1] = end < doc_len ? token(end) : kIgnoreLabel;
      previous_ended_document = end == doc_len;
    } else {
      for (int64_t t = 0; t < piece.length; ++t) labels[pos + t] = input_ids[pos + t];
      if (k > 0 && options_.mask_boundaries) labels[pos] = kIgnoreLabel;
    }
    pos += piece.length;
    cu_seqlens[k + 1] = static_cast<int32_t>(pos);
  }
  for (int64_t i = pos; i < seq_len; ++i) {
    input_ids[i] = options_.pad_id;
    labels[i] = kIgnoreLabel;
    positions[i] = 0;
    segments[i] = 0;
  }
  for (int64_t k = static_cast<int64_t>(pieces.size()) + 1; k <= cap; ++k) {
    cu_seqlens[k] = static_cast<int32_t>(pos);
  }
}

}  // namespace feedline::text
