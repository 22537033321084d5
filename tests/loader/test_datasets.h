// Small datasets used by the loader tests.
#ifndef FEEDLINE_TESTS_LOADER_TEST_DATASETS_H_
#define FEEDLINE_TESTS_LOADER_TEST_DATASETS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "feedline/feedline.h"
#include "feedline/synth/index_dataset.h"

namespace feedline::testing {

// Sample i: "index" = i (i64 scalar) and "noise" = 4 f32 draws from the
// sample's Rng. With `fixed`, both fields are declared fixed (written in place).
class IndexDataset : public synth::IndexDataset {
 public:
  explicit IndexDataset(int64_t n, bool fixed = false)
      : synth::IndexDataset(n, {.fixed = fixed, .noise = true}) {}
};

// Like IndexDataset, but the listed indices throw SampleError(FailureKind::kDecode).
class FaultyDataset : public Dataset {
 public:
  FaultyDataset(int64_t n, std::set<int64_t> bad, bool fixed = false)
      : n_(n), bad_(std::move(bad)), fixed_(fixed) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (bad_.count(index)) {
      throw SampleError(FailureKind::kDecode, Source(index), "corrupt data");
    }
    out.SetScalar<int64_t>("index", index);
  }
  std::string Source(int64_t index) const override {
    return "file" + std::to_string(index) + ".jpg";
  }
  std::vector<FieldSpec> FixedFields() const override {
    if (!fixed_) return {};
    return {{"index", DType::kI64, Shape{}}};
  }

 private:
  int64_t n_;
  std::set<int64_t> bad_;
  bool fixed_;
};

// Sample i has a 1-D "tokens" field of length lengths[i] holding i+1.
class VariableDataset : public Dataset {
 public:
  explicit VariableDataset(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {}
  int64_t size() const override { return static_cast<int64_t>(lengths_.size()); }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    const int64_t len = lengths_[static_cast<size_t>(index)];
    Tensor t = out.Allocate("tokens", DType::kI32, Shape{len});
    for (int64_t k = 0; k < len; ++k) t.data<int32_t>()[k] = static_cast<int32_t>(index + 1);
    out.SetScalar<int64_t>("index", index);
  }
  int64_t Length(int64_t index) const override { return lengths_[static_cast<size_t>(index)]; }

 private:
  std::vector<int64_t> lengths_;
};

// Sleeps `delay` in sample `slow_index` (or every sample when -1).
class SlowDataset : public Dataset {
 public:
  SlowDataset(int64_t n, std::chrono::milliseconds delay, int64_t slow_index = -1)
      : n_(n), delay_(delay), slow_index_(slow_index) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (slow_index_ < 0 || index == slow_index_) std::this_thread::sleep_for(delay_);
    out.SetScalar<int64_t>("index", index);
  }
  std::string Source(int64_t index) const override { return "slow" + std::to_string(index); }

 private:
  int64_t n_;
  std::chrono::milliseconds delay_;
  int64_t slow_index_;
};

// An IterableDataset whose worker w of W yields the indices w, w + W, ...
// below n (W = 1 when loading in the caller's thread).
class RangeStreams : public IterableDataset {
 public:
  explicit RangeStreams(int64_t n) : n_(n) {}
  std::unique_ptr<SampleStream> Open(int worker, int workers, int64_t) const override {
    class Stream : public SampleStream {
     public:
      Stream(int64_t next, int64_t step, int64_t n) : next_(next), step_(step), n_(n) {}
      bool Next(Sample& out, SampleContext&) override {
        if (next_ >= n_) return false;
        out.SetScalar<int64_t>("index", next_);
        next_ += step_;
        return true;
      }

     private:
      int64_t next_, step_, n_;
    };
    return std::make_unique<Stream>(worker, std::max(1, workers), n_);
  }

 private:
  int64_t n_;
};

// All "index" values of a batch.
inline std::vector<int64_t> Indices(const Batch& batch) {
  const Tensor& t = batch["index"];
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + batch.size());
}

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_LOADER_TEST_DATASETS_H_
