#include "src/loader/batch_filler.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feedline/collate.h"
#include "src/core/sample_binder.h"
#include "src/core/sample_context_access.h"
#include "src/loader/exception_kind.h"
#include "src/loader/stats_collector.h"

// Whether a sanitizer's allocator stands in for glibc's (GCC defines
// __SANITIZE_*; clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FEEDLINE_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define FEEDLINE_SANITIZED_ALLOCATOR 1
#endif
#endif
#ifndef FEEDLINE_SANITIZED_ALLOCATOR
#define FEEDLINE_SANITIZED_ALLOCATOR 0
#endif

namespace feedline::internal {

SampleError AsSampleError(const std::exception& e, const Dataset* dataset, int64_t index) {
  std::string source;
  try {
    source = dataset != nullptr ? dataset->Source(index) : std::string();
  } catch (...) {
  }
  if (const auto* se = dynamic_cast<const SampleError*>(&e)) {
    return SampleError(se->kind(), se->source().empty() ? source : se->source(), se->message(),
                       index, se->origin());
  }
  return SampleError(FailureKind::kException, source, e.what(), index);
}

BatchFiller::BatchFiller(const LoaderOptions& options, const Dataset* dataset,
                         const LoadBackend* backend, SlotLayout* layout,
                         const FailurePolicy* failure_policy, Scheduler* scheduler,
                         StatsCollector* stats)
    : options_(options),
      dataset_(dataset),
      backend_(backend),
      together_(LoadsRowsTogether(*backend, options.timeout)),
      layout_(layout),
      failure_policy_(failure_policy),
      scheduler_(scheduler),
      stats_(stats),
      timeout_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(options.timeout).count()) {}

void BatchFiller::LoadTogether(Slot* slot, int64_t begin, int64_t end, SampleContext& ctx,
                               RowLoad* rows) const {
  const size_t n = static_cast<size_t>(end - begin);
  for (size_t i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(begin) + i;
    Sample& sample = slot->samples[r];
    sample.Clear();
    rows[i] = RowLoad{slot->indices[r], &sample, nullptr};
  }
  backend_->LoadRows(std::span<RowLoad>(rows, n), slot->epoch, ctx,
                     /*whole_batch=*/begin == 0 && end == slot->planned_rows);
}

int64_t BatchFiller::RunTask(const Task& task, SampleContext& ctx, WorkerLane* lane, int worker) {
  const int64_t t0 = NowNs();
  Slot* slot = task.slot;
  // Read before this task's rows count as finished: from then on another
  // thread may complete, deliver and recycle the slot.
  const int64_t planned = slot->planned_rows;
  // One failure record for the whole task, cleared after each use: made per
  // row, zeroing it cost more than loading a trivial sample.
  std::optional<SampleError> error;
  // The rows' context shows their batch while they load, and nothing after
  // (the slot may be recycled once they count as finished).
  std::optional<ScopedBatch> shown(std::in_place, ctx, slot->planned_indices);
  RowLoad together[kMaxRowsTogether];
  int64_t together_begin = task.begin;  // rows [together_begin, together_end) are in `together`
  int64_t together_end = task.begin;
  const bool several = together_ && task.end - task.begin > 1;
  for (int64_t row = task.begin; row < task.end; ++row) {
    if (scheduler_->generation() != task.generation ||
        slot->orphaned.load(std::memory_order_acquire)) {
      // The epoch was abandoned, or the batch was bound again after a
      // timeout: account for the rest without loading it.
      for (int64_t r = row; r < task.end; ++r) {
        slot->status[static_cast<size_t>(r)] = RowStatus::kCancelled;
      }
      break;
    }
    if (several && row >= together_end) {
      // Up to the next row given up on after a timeout, which is not loaded
      // again (LoadRow).
      int64_t end = row;
      while (end < std::min(task.end, row + kMaxRowsTogether) &&
             slot->timed_out[static_cast<size_t>(end)] == 0) {
        ++end;
      }
      together_begin = row;
      together_end = end;
      if (end > row) LoadTogether(slot, row, end, ctx, together);
    }
    LoadRow(slot, row, ctx, lane, &error,
            row < together_end ? &together[row - together_begin] : nullptr);
  }
  shown.reset();
  const int64_t n = task.end - task.begin;
  const int64_t loaded = NowNs();
  stats_->AddWorker(worker, loaded - t0, n);
  stats_->DrainContext(ctx);
  int64_t end = loaded;
  // acq_rel: the thread completing the batch sees every row written by the others.
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == planned) {
    FinishBatch(slot, ctx);
    // The collation's time is the worker's too, counted once the batch is out.
    end = NowNs();
    stats_->AddWorker(worker, end - loaded, 0);
  }
  return end - t0;
}

void BatchFiller::LoadRow(Slot* slot, int64_t row, SampleContext& ctx, WorkerLane* lane,
                          std::optional<SampleError>* error, const RowLoad* loaded) {
  const size_t r = static_cast<size_t>(row);
  const int64_t original = slot->indices[r];
  // Substitutes load into this row with the same context and timeout tracking.
  struct RowLoader final : SubstituteLoader {
    RowLoader(BatchFiller* f, Slot* s, int64_t r, SampleContext& c, WorkerLane* l)
        : filler(f), slot(s), row(r), ctx(c), lane(l) {}
    LoadOutcome Load(int64_t index, int attempt, std::optional<SampleError>* error) override {
      return filler->LoadSample(slot, row, index, attempt, ctx, lane, error);
    }
    BatchFiller* filler;
    Slot* slot;
    int64_t row;
    SampleContext& ctx;
    WorkerLane* lane;
  };
  if (const int timed_out = slot->timed_out[r]; timed_out > 0) {
    // An earlier slot of this batch gave up on load `timed_out - 1` of this
    // row: it failed with "timeout", and is not loaded again.
    const int64_t index = failure_policy_->SubstituteIndex(slot->epoch, original, timed_out - 1);
    RowLoader loader(this, slot, row, ctx, lane);
    failure_policy_->HandleFailure(slot, row, failure_policy_->TimeoutFor(index), timed_out,
                                   loader);
    return;
  }
  switch (LoadSample(slot, row, original, 0, ctx, lane, error, loaded)) {
    case LoadOutcome::kOk:
      slot->status[r] = RowStatus::kOk;
      return;
    case LoadOutcome::kAbandoned:
      error->reset();  // a failure of a load given up on is nobody's
      slot->status[r] = RowStatus::kCancelled;
      return;
    case LoadOutcome::kFailed: {
      RowLoader loader(this, slot, row, ctx, lane);
      SampleError failure = std::move(**error);
      error->reset();
      failure_policy_->HandleFailure(slot, row, std::move(failure), 1, loader);
      return;
    }
  }
}

LoadOutcome BatchFiller::LoadSample(Slot* slot, int64_t row, int64_t index, int attempt,
                                    SampleContext& ctx, WorkerLane* lane,
                                    std::optional<SampleError>* error,
                                    const RowLoad* loaded) {
  Sample& sample = slot->samples[static_cast<size_t>(row)];
  if (loaded == nullptr) sample.Clear();
  SampleContextAccess::Reset(ctx, slot->epoch, index);
  const int64_t limit = timeout_ns_;
  int64_t start = 0;
  if (limit > 0) {
    start = NowNs();
    MutexLock guard(&lane->mu);
    lane->slot = slot;
    lane->row = row;
    lane->index = index;
    lane->attempt = attempt;
    lane->since_ns = start;
    lane->abandoned = false;
  }
  std::exception_ptr interrupt;
  RowLoad one{index, &sample, nullptr};
  if (loaded == nullptr) {
    backend_->LoadRows(std::span<RowLoad>(&one, 1), slot->epoch, ctx, /*whole_batch=*/false);
    loaded = &one;
  }
  try {
    if (loaded->error) std::rethrow_exception(loaded->error);
  } catch (...) {
    const CaughtException caught = SortCurrentException();
    switch (caught.kind) {
      case ExceptionKind::kOutOfMemory:  // not a bad sample
        interrupt = std::current_exception();
        break;
      case ExceptionKind::kSampleError:
      case ExceptionKind::kException:
        error->emplace(AsSampleError(*caught.exception, dataset_, index));
        break;
      case ExceptionKind::kInterrupt:
        // Not an exception a sample fails with (Python's KeyboardInterrupt,
        // SystemExit): it ends the epoch, whatever the policy.
        interrupt = std::current_exception();
        break;
    }
  }
  bool abandoned = false;
  if (limit > 0) {
    MutexLock guard(&lane->mu);
    abandoned = lane->abandoned;
    lane->abandoned = false;
    lane->since_ns = -1;
  }
  if (interrupt) {
    scheduler_->Interrupt(std::move(interrupt), slot->generation);
    return LoadOutcome::kAbandoned;
  }
  // The consumer gave up on this load: its batch was bound again elsewhere.
  if (abandoned) return LoadOutcome::kAbandoned;
  // Late, but nobody noticed yet (or num_workers = 0, where nobody watches):
  // the result is discarded all the same, so that the outcome depends on how
  // long the sample took, not on when the consumer looked.
  if (limit > 0 && !*error && NowNs() - start > limit) {
    error->emplace(failure_policy_->TimeoutFor(index));
  }
  return *error ? LoadOutcome::kFailed : LoadOutcome::kOk;
}

// True if every row that is kept wrote each field of `layout` in place.
bool BatchFiller::RowsFitLayout(const Slot& slot, const FixedLayout& layout) {
  for (int64_t r = 0; r < slot.planned_rows; ++r) {
    const size_t ur = static_cast<size_t>(r);
    if (slot.status[ur] == RowStatus::kSkipped) continue;
    const Sample& sample = slot.samples[ur];
    size_t bound = 0;
    for (int f = 0; f < sample.num_fields(); ++f) bound += SampleBinder::IsBound(sample, f) ? 1 : 0;
    if (bound != layout.fields.size()) return false;
  }
  return true;
}

void BatchFiller::CollateSlot(Slot* slot, SampleContext& ctx) {
  static const FixedLayout kNothingInPlace;
  const FixedLayout* layout = slot->layout ? slot->layout.get() : &kNothingInPlace;
  if (layout->learned && !RowsFitLayout(*slot, *layout)) {
    // A row's field differs from the learned layout (it went to the row's
    // own storage): this batch is collated as if nothing were in place, with
    // copies of the rows that were, and the layout is not guessed again.
    for (int64_t r = 0; r < slot->planned_rows; ++r) {
      SampleBinder::Detach(slot->samples[static_cast<size_t>(r)]);
    }
    layout_->Forget();
    layout = &kNothingInPlace;
  }
  const std::vector<FieldSpec>& fixed = layout->fields;
  const std::vector<size_t>& row_bytes = layout->row_bytes;
  // Rows that survive (all but skipped ones), compacted to the front.
  std::vector<const Sample*>& kept = slot->kept_rows;  // reused: no allocation per batch
  kept.clear();
  int64_t out = 0;
  for (int64_t r = 0; r < slot->planned_rows; ++r) {
    const size_t ur = static_cast<size_t>(r);
    if (slot->status[ur] == RowStatus::kSkipped) continue;
    if (out != r) {
      for (size_t k = 0; k < fixed.size(); ++k) {
        std::byte* base = slot->fields[k].storage.data();
        std::memmove(base + static_cast<size_t>(out) * row_bytes[k], base + ur * row_bytes[k],
                     row_bytes[k]);
      }
    }
    slot->delivered_indices[static_cast<size_t>(out)] = slot->indices[ur];
    kept.push_back(&slot->samples[ur]);
    ++out;
  }
  slot->rows = out;
  slot->ResetFields();
  if (out == 0) return;
  for (size_t k = 0; k < fixed.size(); ++k) {
    SlotField& f = slot->FieldFor(fixed[k].name);
    f.fixed = true;
    f.tensor = Tensor(fixed[k].dtype, fixed[k].shape.Prepend(out), f.storage.data());
  }
  SlotBatchBuilder builder(slot);
  auto timer = ctx.Time(Stage::kCollate);
  std::span<const Sample* const> samples(kept.data(), kept.size());
  if (options_.collate_fn) {
    options_.collate_fn(samples, builder);
  } else {
    DefaultCollate(samples, options_.collate, builder);
    // Nothing declared: the fields this batch stacked are written in place
    // from now on (slot_layout.h).
    if (layout_->learning()) layout_->Learn(samples, options_.collate);
    if (!layout_->learning() && !layout->learned && layout->fields.empty() &&
        layout_->current()->learned) {
      // This slot was bound before the layout was learned: its rows' own
      // buffers (a batch's worth) are not needed again, since the slot is
      // bound to the learned layout when reused. Free them now rather than
      // hold them until then.
      for (int64_t r = 0; r < slot->planned_rows; ++r) {
        SampleBinder::ReleaseBuffers(slot->samples[static_cast<size_t>(r)]);
      }
      // glibc keeps freed blocks of a thread's arena for reuse, and nothing
      // will reuse these: give them back (38 MB for a batch of 64 images;
      // at most once per slot, only before the layout is learned). Not under
      // a sanitizer, whose allocator replaces glibc's: there malloc_trim
      // walks glibc's unused arena and crashes (seen with ThreadSanitizer
      // and AddressSanitizer).
#if !FEEDLINE_SANITIZED_ALLOCATOR
      ::malloc_trim(0);
#endif
    }
  }
  if (options_.error_policy == ErrorPolicy::kReplace) {
    // bool, so `~replaced` in numpy selects the rows that were not replaced.
    Tensor mask = builder.Add("replaced", DType::kBool, Shape{out});
    auto* flags = static_cast<uint8_t*>(mask.raw());
    int64_t i = 0;
    for (int64_t r = 0; r < slot->planned_rows; ++r) {
      const RowStatus s = slot->status[static_cast<size_t>(r)];
      if (s == RowStatus::kSkipped) continue;
      flags[i++] = s == RowStatus::kReplaced ? 1 : 0;
    }
  }
}

bool BatchFiller::FinishBatch(Slot* slot, SampleContext& ctx) {
  const bool stale = scheduler_->IsStale(slot);
  if (!stale) {
    if (!slot->errors.empty()) {
      // Raise the error of the earliest row, as sequential loading would.
      auto first = std::min_element(slot->errors.begin(), slot->errors.end(),
                                    [](const auto& a, const auto& b) { return a.first < b.first; });
      slot->raise = first->second;
    } else {
      auto collate_failed = [&](FailureKind kind, const std::string& source,
                                const std::string& message, const FailureOrigin& origin) {
        slot->raise = SampleError(kind, source,
                                  message + " (batch " + std::to_string(slot->batch_index) + ")",
                                  -1, origin);
        slot->error_reasons.push_back(FailureKindName(kind));
      };
      try {
        CollateSlot(slot, ctx);
      } catch (...) {
        const CaughtException caught = SortCurrentException();
        switch (caught.kind) {
          case ExceptionKind::kSampleError: {
            const SampleError& e = caught.sample_error();
            collate_failed(e.kind(), e.source(), e.message(), e.origin());  // its own prefix, once
            break;
          }
          case ExceptionKind::kException:
            collate_failed(FailureKind::kCollate, "", caught.exception->what(), {});
            break;
          case ExceptionKind::kOutOfMemory:
          case ExceptionKind::kInterrupt:  // KeyboardInterrupt in a collate_fn
            scheduler_->Interrupt(std::current_exception(), slot->generation);
            break;
        }
      }
    }
  }
  stats_->DrainContext(ctx);  // the collation's time
  return scheduler_->Complete(slot, stale);
}

}  // namespace feedline::internal
