#include "feedline/text/mixed_dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "src/core/mutex.h"
#include "src/text/index_permutation.h"

namespace feedline::text {

namespace {

// Past this the blend's arrays would take over 40 GB.
constexpr int64_t kMaxPositions = int64_t{1} << 32;

std::string Name(size_t k) { return "source " + std::to_string(k); }

}  // namespace

// The epoch's plan, split by source: which source owner each position of
// the loader's order reads, and how many of each owner's rows the
// delivered prefix held when last counted.
struct MixedDataset::PlanSplit {
  static constexpr uint16_t kNone = 0xFFFF;  // a position outside the mix (never a source)

  feedline::internal::Mutex mu;
  std::vector<uint16_t> owners GUARDED_BY(mu);
  int64_t counted GUARDED_BY(mu) = 0;
  std::vector<int64_t> delivered GUARDED_BY(mu);
};

const char* MixStoppingName(MixStopping stopping) {
  switch (stopping) {
    case MixStopping::kFirstExhausted: return "first_exhausted";
    case MixStopping::kAllExhausted: return "all_exhausted";
    case MixStopping::kNever: return "never";
  }
  return "?";
}

MixStopping ParseMixStopping(const std::string& text) {
  for (MixStopping s :
       {MixStopping::kFirstExhausted, MixStopping::kAllExhausted, MixStopping::kNever}) {
    if (text == MixStoppingName(s)) return s;
  }
  throw Error(
      "MixedDataset: stopping must be \"first_exhausted\", \"all_exhausted\" or \"never\", got \"" +
      text + "\"");
}

MixedDataset::MixedDataset(std::vector<std::shared_ptr<const Dataset>> sources, MixOptions options)
    : sources_(std::move(sources)),
      options_(std::move(options)),
      plan_(std::make_shared<PlanSplit>()) {
  const size_t n = sources_.size();
  if (n == 0) throw Error("MixedDataset: give at least one source");
  if (n >= PlanSplit::kNone) {
    throw Error("MixedDataset: at most 65534 sources, got " + std::to_string(n));
  }
  for (size_t k = 0; k < n; ++k) {
    size_t owner = k;
    for (size_t j = 0; j < k; ++j) {
      if (sources_[j] == sources_[k]) {
        owner = j;
        break;
      }
    }
    plan_owner_.push_back(static_cast<uint16_t>(owner));
  }
  if (options_.weights.size() != n) {
    throw Error("MixedDataset: " + std::to_string(options_.weights.size()) + " weights for " +
                std::to_string(n) + " sources");
  }
  if (options_.shuffle.empty()) options_.shuffle.assign(n, false);
  if (options_.start.empty()) options_.start.assign(n, 0);
  if (options_.shuffle.size() != n || options_.start.size() != n) {
    throw Error("MixedDataset: shuffle and start need one entry per source (" + std::to_string(n) +
                ")");
  }
  double total = 0;
  for (size_t k = 0; k < n; ++k) {
    const double w = options_.weights[k];
    if (!std::isfinite(w) || w < 0) {
      throw Error("MixedDataset: the weight of " + Name(k) + " must be finite and >= 0, got " +
                  std::to_string(w));
    }
    if (sources_[k] == nullptr) throw Error("MixedDataset: " + Name(k) + " is null");
    if (w > 0 && sources_[k]->size() == 0) {
      throw Error("MixedDataset: " + Name(k) + " is empty but has weight " + std::to_string(w));
    }
    if (options_.start[k] < 0) {
      throw Error("MixedDataset: start of " + Name(k) + " must be >= 0, got " +
                  std::to_string(options_.start[k]));
    }
    total += w;
  }
  if (total <= 0) throw Error("MixedDataset: the weights are all 0");
  if (options_.stopping == MixStopping::kNever && options_.num_samples < 0) {
    throw Error("MixedDataset: stopping=\"never\" needs num_samples (the rows of the mix)");
  }
  if (options_.num_samples < -1) {
    throw Error("MixedDataset: num_samples must be >= 0 (or -1 for none), got " +
                std::to_string(options_.num_samples));
  }
  std::vector<double> weights(n);
  for (size_t k = 0; k < n; ++k) weights[k] = options_.weights[k] / total;

  // The blend, position by position. `left` counts the sources with a
  // weight that still have rows never drawn (kAllExhausted ends at 0).
  std::vector<int64_t> taken(n, 0);
  int64_t left = 0;
  for (size_t k = 0; k < n; ++k) {
    if (weights[k] > 0 && options_.start[k] < sources_[k]->size()) ++left;
  }
  const int64_t cap = options_.num_samples >= 0 ? options_.num_samples : kMaxPositions + 1;
  for (int64_t i = 0; i < cap; ++i) {
    if (options_.stopping == MixStopping::kAllExhausted && left == 0) break;
    size_t pick = 0;
    double best = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < n; ++k) {
      if (weights[k] <= 0) continue;
      const double error = weights[k] * static_cast<double>(i + 1) - static_cast<double>(taken[k]);
      if (error > best) {
        best = error;
        pick = k;
      }
    }
    const int64_t draw = options_.start[pick] + taken[pick];
    const int64_t rows = sources_[pick]->size();
    if (options_.stopping == MixStopping::kFirstExhausted && draw >= rows) break;
    if (i == kMaxPositions) {
      throw Error("MixedDataset: the blend passes 2^32 rows before it stops (stopping=\"" +
                  std::string(MixStoppingName(options_.stopping)) + "\"); give num_samples");
    }
    if (draw == rows - 1) --left;
    source_.push_back(static_cast<uint16_t>(pick));
    draw_.push_back(draw);
    ++taken[pick];
  }
}

int MixedDataset::source_of(int64_t index) const {
  CheckIndex(index, size());
  return source_[static_cast<size_t>(index)];
}

int64_t MixedDataset::row_of(int64_t index) const {
  const int k = source_of(index);
  const int64_t draw = draw_[static_cast<size_t>(index)];
  const int64_t rows = sources_[static_cast<size_t>(k)]->size();
  const int64_t pass = draw / rows;
  const int64_t within = draw % rows;
  if (!options_.shuffle[static_cast<size_t>(k)]) return within;
  const uint64_t key = MixSeed(MixSeed(options_.seed, static_cast<uint64_t>(k)),
                               static_cast<uint64_t>(pass));
  return internal::IndexPermutation(rows, key).At(within);
}

std::vector<int64_t> MixedDataset::DrawsBefore(int64_t position) const {
  if (position < 0 || position > size()) {
    throw IndexError("MixedDataset: position " + std::to_string(position) +
                     " is outside [0, " + std::to_string(size()) + "]");
  }
  std::vector<int64_t> draws = options_.start;
  for (int64_t i = 0; i < position; ++i) ++draws[source_[static_cast<size_t>(i)]];
  return draws;
}

void MixedDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  const int k = source_of(index);
  sources_[static_cast<size_t>(k)]->Get(row_of(index), out, ctx);
  if (!options_.source_field.empty()) out.SetScalar<int64_t>(options_.source_field, k);
}

std::string MixedDataset::Source(int64_t index) const {
  const int k = source_of(index);
  return Name(static_cast<size_t>(k)) + ": " +
         sources_[static_cast<size_t>(k)]->Source(row_of(index));
}

int64_t MixedDataset::Length(int64_t index) const {
  const int k = source_of(index);
  return sources_[static_cast<size_t>(k)]->Length(row_of(index));
}

void MixedDataset::EpochOrder(std::span<const int64_t> order) const {
  const size_t n = sources_.size();
  std::vector<std::vector<int64_t>> rows(n);
  std::vector<uint16_t> owners;
  owners.reserve(order.size());
  for (const int64_t index : order) {
    if (index < 0 || index >= size()) {
      owners.push_back(PlanSplit::kNone);
      continue;
    }
    const uint16_t owner = plan_owner_[source_[static_cast<size_t>(index)]];
    owners.push_back(owner);
    rows[owner].push_back(row_of(index));
  }
  {
    feedline::internal::MutexLock lock(&plan_->mu);
    plan_->owners.swap(owners);
    plan_->counted = 0;
    plan_->delivered.assign(n, 0);
  }
  for (size_t k = 0; k < n; ++k) {
    if (plan_owner_[k] == k) sources_[k]->EpochOrder(rows[k]);
  }
}

void MixedDataset::EpochProgress(int64_t delivered) const {
  std::vector<int64_t> counts;
  {
    feedline::internal::MutexLock lock(&plan_->mu);
    const auto told = static_cast<int64_t>(plan_->owners.size());
    if (told == 0) return;
    const int64_t upto = std::clamp<int64_t>(delivered, 0, told);
    if (upto < plan_->counted) {  // not a prefix of the last count: count again
      plan_->counted = 0;
      plan_->delivered.assign(sources_.size(), 0);
    }
    for (int64_t p = plan_->counted; p < upto; ++p) {
      const uint16_t owner = plan_->owners[static_cast<size_t>(p)];
      if (owner != PlanSplit::kNone) ++plan_->delivered[owner];
    }
    plan_->counted = upto;
    counts = plan_->delivered;
  }
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (plan_owner_[k] == k) sources_[k]->EpochProgress(counts[k]);
  }
}

std::vector<FieldSpec> MixedDataset::FixedFields() const {
  std::vector<FieldSpec> fields = sources_[0]->FixedFields();
  for (size_t k = 1; k < sources_.size() && !fields.empty(); ++k) {
    const std::vector<FieldSpec> other = sources_[k]->FixedFields();
    bool same = other.size() == fields.size();
    for (size_t f = 0; same && f < fields.size(); ++f) {
      same = other[f].name == fields[f].name && other[f].dtype == fields[f].dtype &&
             other[f].shape == fields[f].shape;
    }
    if (!same) fields.clear();
  }
  if (!options_.source_field.empty()) {
    fields.push_back({options_.source_field, DType::kI64, Shape()});
  }
  return fields;
}

}  // namespace feedline::text
