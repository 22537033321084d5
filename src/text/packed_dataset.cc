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
#include "feedline/text/columnar_dataset.h"
#include "feedline/text/token_dataset.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::text {

namespace {

constexpr int64_t kIgnoreLabel = -100;

// Token ids fit in 32 bits wherever feedline keeps them (TokenDataset
// stores them so); a wider one is a corrupt document, not an id.
void CheckFitsInt32(const int64_t* tokens, int64_t size) {
  for (int64_t i = 0; i < size; ++i) {
    if (tokens[i] < std::numeric_limits<int32_t>::min() ||
        tokens[i] > std::numeric_limits<int32_t>::max()) {
      throw Error("holds token " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                  ", which does not fit in 32 bits (as TokenDataset refuses it)");
    }
  }
}

// A document's tokens as int64, read from any 1-D integer field.
template <typename T>
void Widen(const Tensor& field, std::vector<int64_t>& out) {
  const T* values = static_cast<const T*>(field.raw());
  out.assign(values, values + field.elements());
}

void ReadTokens(const Tensor& field, std::vector<int64_t>& out) {
  switch (field.dtype()) {
    case DType::kI64:
      Widen<int64_t>(field, out);
      CheckFitsInt32(out.data(), static_cast<int64_t>(out.size()));
      return;
    case DType::kI32: Widen<int32_t>(field, out); return;
    case DType::kI16: Widen<int16_t>(field, out); return;
    case DType::kU16: Widen<uint16_t>(field, out); return;
    case DType::kI8: Widen<int8_t>(field, out); return;
    case DType::kU8: Widen<uint8_t>(field, out); return;
    default: throw Error("is not of an integer dtype");
  }
}

}  // namespace

// Where a document read through Get lands: kept per thread between rows, so
// that reading allocates nothing once warm, one per nesting depth (a packed
// dataset over a dataset that reads another through a PackedDataset).
class PackedDataset::DocumentBuffer {
 public:
  DocumentBuffer() {
    if (buffers().size() <= depth()) buffers().push_back(std::make_unique<Buffer>());
    buffer_ = buffers()[depth()].get();
    ++depth();
  }
  ~DocumentBuffer() {
    buffer_->keep.reset();  // a decoded row group is not held past the row
    --depth();
  }
  DocumentBuffer(const DocumentBuffer&) = delete;
  DocumentBuffer& operator=(const DocumentBuffer&) = delete;

  Sample& sample() { return buffer_->sample; }
  std::vector<int64_t>& tokens() { return buffer_->tokens; }
  // What keeps the last document read in place alive.
  std::shared_ptr<const void>& keep() { return buffer_->keep; }

 private:
  struct Buffer {
    Sample sample;
    std::vector<int64_t> tokens;
    std::shared_ptr<const void> keep;
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

namespace {

// A row's token-wide fields.
struct RowFields {
  int64_t* input_ids;
  int64_t* labels;
  int64_t* positions;
  int32_t* segments;
};

// Writes `piece` of the document `doc` (doc_len tokens) at `pos` of the
// row, as its piece k, with the labels of the header's table; returns
// whether the piece ends its document. One loop per field, so that each
// vectorizes.
template <typename T>
bool WritePiece(const T* doc, int64_t doc_len, const PackPiece& piece, size_t k, int64_t pos,
                bool previous_ended_document, const PackedRowOptions& options,
                const RowFields& row) {
  const T* src = doc + piece.offset;
  const int64_t n = piece.length;
  int64_t* ids = row.input_ids + pos;
  int64_t* labels = row.labels + pos;
  int64_t* positions = row.positions + pos;
  for (int64_t t = 0; t < n; ++t) ids[t] = src[t];
  for (int64_t t = 0; t < n; ++t) positions[t] = t;
  std::fill_n(row.segments + pos, n, static_cast<int32_t>(k + 1));
  if (!options.shift_labels) {
    std::copy_n(ids, n, labels);
    if (k > 0 && options.mask_boundaries) labels[0] = kIgnoreLabel;
    return false;
  }
  // Without boundary masks the previous document's last token predicts
  // this piece's first.
  if (k > 0 && previous_ended_document && !options.mask_boundaries) labels[-1] = ids[0];
  for (int64_t t = 0; t + 1 < n; ++t) labels[t] = src[t + 1];
  const int64_t end = piece.offset + n;
  labels[n - 1] = end < doc_len ? static_cast<int64_t>(doc[end]) : kIgnoreLabel;
  return end == doc_len;
}

}  // namespace

struct PackedDataset::DocumentOrder {
  feedline::internal::Mutex mu;
  // piece_ends[k]: the documents' order's length after the order's first k
  // rows (empty: no order told).
  std::vector<int64_t> piece_ends GUARDED_BY(mu);

  void Set(std::vector<int64_t>* ends) {
    feedline::internal::MutexLock lock(&mu);
    piece_ends.swap(*ends);
  }
  // The pieces of the documents' order before its first `delivered` rows,
  // or -1 when no order was told.
  int64_t PiecesBefore(int64_t delivered) {
    feedline::internal::MutexLock lock(&mu);
    if (piece_ends.empty()) return -1;
    const auto last = static_cast<int64_t>(piece_ends.size()) - 1;
    return piece_ends[static_cast<size_t>(std::clamp<int64_t>(delivered, 0, last))];
  }
};

PackedDataset::PackedDataset(std::shared_ptr<const Dataset> documents,
                             std::shared_ptr<const PackSchedule> schedule,
                             PackedRowOptions options)
    : documents_(std::move(documents)),
      tokens_(dynamic_cast<const TokenDataset*>(documents_.get())),
      columnar_(dynamic_cast<const ColumnarDataset*>(documents_.get())),
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
  if (columnar_ != nullptr) {
    columnar_column_ = columnar_->ListColumn(options_.tokens_field);
    if (columnar_column_ < 0) columnar_ = nullptr;  // read through Get, which says why
  }
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
  document_order_->Set(&piece_ends);
  documents_->EpochOrder(documents);
}

void PackedDataset::EpochProgress(int64_t delivered) const {
  const int64_t pieces = document_order_->PiecesBefore(delivered);
  if (pieces >= 0) documents_->EpochProgress(pieces);
}

PackedDataset::DocumentTokens PackedDataset::Tokens(int64_t document, int64_t row,
                                                    SampleContext& ctx,
                                                    DocumentBuffer& buffer) const {
  DocumentTokens out;
  if (tokens_ != nullptr) {
    const std::span<const int32_t> tokens = tokens_->document(document);
    out.narrow = tokens.data();
    out.size = static_cast<int64_t>(tokens.size());
    return out;
  }
  const std::string field = "field \"" + options_.tokens_field + "\" ";
  auto where = [&] {
    return "document " + std::to_string(document) + " (" + documents_->Source(document) + ")";
  };
  if (columnar_ != nullptr) {
    ListRow list = columnar_->GetList(document, static_cast<size_t>(columnar_column_));
    out.size = list.size;
    if (list.dtype == DType::kI32) {
      out.narrow = static_cast<const int32_t*>(list.data);
    } else {
      out.wide = static_cast<const int64_t*>(list.data);
      try {
        CheckFitsInt32(out.wide, out.size);
      } catch (const Error& e) {
        throw SampleError(FailureKind::kSchema, where(), field + e.what(), row);
      }
    }
    buffer.keep() = std::move(list.owner);
    return out;
  }
  Sample& sample = buffer.sample();
  sample.Clear();
  documents_->Get(document, sample, ctx);
  const Tensor* tensor = sample.Find(options_.tokens_field);
  if (tensor == nullptr) {
    throw SampleError(FailureKind::kSchema, where(),
                      "has no field \"" + options_.tokens_field + "\" to pack", row);
  }
  if (tensor->shape().rank() != 1) {
    throw SampleError(FailureKind::kSchema, where(),
                      field + "has shape " + tensor->shape().ToString() + ", not one dimension",
                      row);
  }
  try {
    ReadTokens(*tensor, buffer.tokens());
  } catch (const Error& e) {
    throw SampleError(FailureKind::kSchema, where(), field + e.what(), row);
  }
  out.wide = buffer.tokens().data();
  out.size = static_cast<int64_t>(buffer.tokens().size());
  return out;
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
  const RowFields row{input_ids, labels, positions, segments};
  const std::span<const PackPiece> pieces = plan->row(index);
  int64_t pos = 0;
  bool previous_ended_document = false;
  cu_seqlens[0] = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const PackPiece& piece = pieces[k];
    // The document's tokens, whole: the label after a cut is the token
    // that follows the piece.
    const DocumentTokens document = Tokens(piece.document, index, ctx, buffer);
    // A document must have the length it was planned with, either way: one
    // longer would lose its tokens past the length silently.
    const int64_t planned = schedule_->length(piece.document);
    if (document.size != planned) {
      throw SampleError(FailureKind::kSchema, documents_->Source(piece.document),
                        "document " + std::to_string(piece.document) + " has " +
                            std::to_string(document.size) + " tokens, but its length said " +
                            std::to_string(planned),
                        index);
    }
    previous_ended_document =
        document.narrow != nullptr
            ? WritePiece(document.narrow, document.size, piece, k, pos, previous_ended_document,
                         options_, row)
            : WritePiece(document.wide, document.size, piece, k, pos, previous_ended_document,
                         options_, row);
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
