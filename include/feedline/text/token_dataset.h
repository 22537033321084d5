// TokenDataset: tokenized documents held in memory as one flat token array
// and the offsets where each document starts (the layout of Megatron's
// indexed datasets). Sample i has one field, a 1-D int64 tensor of document
// i's tokens; Length(i) is its token count, read without loading it.
//
// Thread safety: immutable after construction, like every Dataset.
//
// Example:
//   // Documents {5, 6, 7} and {8, 9}.
//   TokenDataset docs({5, 6, 7, 8, 9}, {0, 3, 5});
//   docs.document(1);  // {8, 9}
#ifndef FEEDLINE_TEXT_TOKEN_DATASET_H_
#define FEEDLINE_TEXT_TOKEN_DATASET_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"

namespace feedline::text {

class FEEDLINE_EXPORT TokenDataset : public Dataset {
 public:
  // Document i is tokens[offsets[i], offsets[i + 1]). Throws Error unless
  // offsets is non-empty, starts at 0, never decreases and ends at
  // tokens.size(), or if `field` is empty.
  TokenDataset(std::vector<int32_t> tokens, std::vector<int64_t> offsets,
               std::string field = "input_ids");

  int64_t size() const override { return static_cast<int64_t>(offsets_.size()) - 1; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  int64_t Length(int64_t index) const override;

  // Document `index`'s tokens, a view into this dataset. Throws IndexError.
  std::span<const int32_t> document(int64_t index) const;
  const std::string& field() const { return field_; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  std::vector<int32_t> tokens_;
  std::vector<int64_t> offsets_;
  std::string field_;
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_TOKEN_DATASET_H_
