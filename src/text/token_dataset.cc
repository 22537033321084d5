#include "feedline/text/token_dataset.h"

#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::text {

TokenDataset::TokenDataset(std::vector<int32_t> tokens, std::vector<int64_t> offsets,
                           std::string field)
    : tokens_(std::move(tokens)), offsets_(std::move(offsets)), field_(std::move(field)) {
  if (field_.empty()) throw Error("TokenDataset: field must not be empty");
  if (offsets_.empty() || offsets_.front() != 0) {
    throw Error("TokenDataset: offsets must start at 0 (one more offset than documents)");
  }
  for (size_t i = 1; i < offsets_.size(); ++i) {
    if (offsets_[i] < offsets_[i - 1]) {
      throw Error("TokenDataset: offsets must not decrease, but offsets[" + std::to_string(i) +
                  "] = " + std::to_string(offsets_[i]) + " < offsets[" + std::to_string(i - 1) +
                  "] = " + std::to_string(offsets_[i - 1]));
    }
  }
  if (offsets_.back() != static_cast<int64_t>(tokens_.size())) {
    throw Error("TokenDataset: the last offset (" + std::to_string(offsets_.back()) +
                ") must be the number of tokens (" + std::to_string(tokens_.size()) + ")");
  }
}

std::span<const int32_t> TokenDataset::document(int64_t index) const {
  CheckIndex(index, size());
  const auto begin = static_cast<size_t>(offsets_[static_cast<size_t>(index)]);
  const auto end = static_cast<size_t>(offsets_[static_cast<size_t>(index) + 1]);
  return std::span<const int32_t>(tokens_).subspan(begin, end - begin);
}

void TokenDataset::Get(int64_t index, Sample& out, SampleContext&) const {
  const std::span<const int32_t> tokens = document(index);
  Tensor t = out.Allocate(field_, DType::kI64, Shape{static_cast<int64_t>(tokens.size())});
  int64_t* dst = t.data<int64_t>();
  for (size_t i = 0; i < tokens.size(); ++i) dst[i] = tokens[i];
}

std::string TokenDataset::Source(int64_t index) const {
  CheckIndex(index, size());
  return "document " + std::to_string(index);
}

int64_t TokenDataset::Length(int64_t index) const {
  return static_cast<int64_t>(document(index).size());
}

}  // namespace feedline::text
