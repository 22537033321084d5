#include "feedline/concat.h"

#include <algorithm>
#include <utility>

#include "feedline/error.h"
#include "src/core/sample_context_access.h"

namespace feedline {

Concat::Concat(std::vector<std::shared_ptr<const Dataset>> parts) : parts_(std::move(parts)) {
  if (parts_.empty()) throw Error("Concat: needs at least one dataset");
  offsets_.push_back(0);
  for (const auto& part : parts_) {
    if (!part) throw Error("Concat: a dataset is null");
    offsets_.push_back(offsets_.back() + part->size());
  }
}

std::pair<size_t, int64_t> Concat::Locate(int64_t index) const {
  CheckIndex(index, size());
  // upper_bound finds the first part starting after index; the one before holds it.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
  const size_t part = static_cast<size_t>(it - offsets_.begin()) - 1;
  return {part, index - offsets_[part]};
}

void Concat::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  auto [part, local] = Locate(index);
  // The batch's samples of the same part, in its indices, for a dataset
  // that draws from its batch.
  std::vector<int64_t> batch;
  for (int64_t i : ctx.batch()) {
    if (i >= offsets_[part] && i < offsets_[part + 1]) batch.push_back(i - offsets_[part]);
  }
  internal::ScopedBatch shown(ctx, batch);
  parts_[part]->Get(local, out, ctx);
}

std::string Concat::Source(int64_t index) const {
  auto [part, local] = Locate(index);
  return parts_[part]->Source(local);
}

int64_t Concat::Length(int64_t index) const {
  auto [part, local] = Locate(index);
  return parts_[part]->Length(local);
}

std::vector<std::string> Concat::PaddedFields() const {
  std::vector<std::string> names;
  for (const auto& part : parts_) {
    for (std::string& name : part->PaddedFields()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    }
  }
  return names;
}

std::vector<PadMultiple> Concat::PadMultiples() const {
  std::vector<PadMultiple> all;
  for (const auto& part : parts_) {
    for (PadMultiple& pad : part->PadMultiples()) {
      const bool known = std::any_of(all.begin(), all.end(),
                                     [&](const PadMultiple& p) { return p.field == pad.field; });
      if (!known) all.push_back(std::move(pad));
    }
  }
  return all;
}

std::vector<FieldSpec> Concat::FixedFields() const {
  std::vector<FieldSpec> first = parts_[0]->FixedFields();
  for (size_t k = 1; k < parts_.size(); ++k) {
    std::vector<FieldSpec> other = parts_[k]->FixedFields();
    const bool same = other.size() == first.size() &&
                      std::equal(first.begin(), first.end(), other.begin(),
                                 [](const FieldSpec& a, const FieldSpec& b) {
                                   return a.name == b.name && a.dtype == b.dtype &&
                                          a.shape == b.shape;
                                 });
    if (!same) return {};
  }
  return first;
}

}  // namespace feedline
