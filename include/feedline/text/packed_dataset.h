// PackedDataset: fixed-length rows packed from the documents of another
// dataset, as its PackSchedule planned them for the epoch being loaded.
//
// Row r of epoch e is schedule.Rows(e)->row(r); Get reads the epoch from the
// SampleContext, so a PackBatchSampler over the same schedule must be the
// loader's batch sampler. Each row has five fixed fields (FixedFields, so
// they are written straight into the batch):
//   input_ids    int64 [seq_len]  the pieces' tokens end to end, then pad_id
//   labels       int64 [seq_len]  shift_labels: the next token of the same
//                                 document (also across a cut: a piece whose
//                                 document goes on is labelled with the token
//                                 that follows it), -100 after a document's
//                                 last token when mask_boundaries (else the
//                                 next piece's first token), -100 in padding.
//                                 Without shift_labels: input_ids, with -100
//                                 at each piece after the first when
//                                 mask_boundaries (for models that shift
//                                 themselves, as Hugging Face's do) and in padding
//   position_ids int64 [seq_len]  0, 1, ... restarting at each piece; 0 in padding
//   segment_ids  int32 [seq_len]  1 for the first piece, 2 for the next...; 0 in padding
//   cu_seqlens   int32 [max_segments + 1]  0 and each piece's end, then the
//                                 row's token count repeated (zero-length
//                                 segments), for variable-length attention
// The source's samples must have a 1-D integer field named `tokens_field`
// whose length is the source's Length(i); documents of a TokenDataset, and
// the list column of a ColumnarDataset (Parquet, Arrow), are read in place,
// others through Get.
//
// Told the loader's order of rows (EpochOrder, EpochProgress), it tells its
// documents the order the rows read them in (each row's pieces in turn, of
// the epoch its PackBatchSampler planned) and how far that order is
// delivered: a ColumnarDataset of documents (Parquet) then reads each row
// group ahead of need, and once (docs/text.md).
//
// The number of rows differs a little between epochs, and a dataset's size
// must bound its indices in every epoch (worker processes check it), so
// size() is the schedule's max_rows(): a row past the epoch's plan (only a
// substitute the error policy draws asks for one) is row index % rows. The
// loader's batches, from the PackBatchSampler, ask for the epoch's rows only.
//
// Thread safety: Get may run on any number of threads; the order told by
// the loader is locked inside.
#ifndef FEEDLINE_TEXT_PACKED_DATASET_H_
#define FEEDLINE_TEXT_PACKED_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/text/pack_schedule.h"

namespace feedline::text {

class ColumnarDataset;
class TokenDataset;

struct FEEDLINE_EXPORT PackedRowOptions {
  std::string tokens_field = "input_ids";
  int64_t pad_id = 0;
  bool shift_labels = true;
  bool mask_boundaries = true;
};

class FEEDLINE_EXPORT PackedDataset : public Dataset {
 public:
  // Throws Error if a pointer is null or the schedule does not have one
  // length per document of `documents`.
  PackedDataset(std::shared_ptr<const Dataset> documents,
                std::shared_ptr<const PackSchedule> schedule, PackedRowOptions options = {});

  int64_t size() const override { return size_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  const std::shared_ptr<const PackSchedule>& schedule() const { return schedule_; }

 private:
  class DocumentBuffer;
  // A document's tokens, whole: int32 or int64 values in place (or in the
  // buffer, read through Get).
  struct DocumentTokens {
    const int32_t* narrow = nullptr;
    const int64_t* wide = nullptr;
    int64_t size = 0;
  };
  // Throws SampleError (naming the document, for packed row `row`) for a
  // document without the token field or with tokens beyond 32 bits.
  DocumentTokens Tokens(int64_t document, int64_t row, SampleContext& ctx,
                        DocumentBuffer& buffer) const;

  std::shared_ptr<const Dataset> documents_;
  const TokenDataset* tokens_;  // documents_ when it is one: read in place
  const ColumnarDataset* columnar_;  // documents_ when it is one with the field as a list
  int64_t columnar_column_ = -1;     // that list column
  std::shared_ptr<const PackSchedule> schedule_;
  PackedRowOptions options_;
  int64_t size_;
  // Where each row of the loader's order ends in its documents' order.
  struct DocumentOrder;
  std::shared_ptr<DocumentOrder> document_order_;
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_PACKED_DATASET_H_
