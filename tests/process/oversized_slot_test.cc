// Batch slots that do not fit in the shared-memory reservation, through the
// public DataLoader: such a slot comes from the heap, the worker processes
// cannot write into it, and its rows come back through their arenas (one
// copy more). The batches must still be those of thread mode, byte for byte.
//
// How the reservation is made small from outside: it is the batch slots'
// memory budget (a quarter of the available memory, shared among the ranks
// of the host, as the launcher variables tell), at least 256 MB. With the
// launcher variables of 4096 local ranks it is that minimum on any host with
// less than 4 TiB available. The loader has no stat or log line for a heap
// slot, so the test sees where each batch lives from /proc/self/maps: in the
// slots' shared file or not.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

// 10 MB of int32 per sample: a batch of 4 takes about 38 MiB, so the 8
// batches of an epoch (kept by the caller, each in its own slot) need about
// 305 MiB: the seventh and eighth cannot fit in a 256 MiB reservation.
constexpr int64_t kValues = 2'500'000;
constexpr int64_t kOversizedBatch = 4;
constexpr int64_t kSamples = 32;

// Sample i: "values"[k] = i * kValues + k (fixed, large), "index" (fixed)
// and "noise", 4 draws of the sample's Rng (the same in either mode).
class LargeSamples : public Dataset {
 public:
  int64_t size() const override { return kSamples; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, kSamples);
    Tensor values = out.Allocate("values", DType::kI32, Shape{kValues});
    int32_t* v = values.data<int32_t>();
    for (int64_t k = 0; k < kValues; ++k) v[k] = static_cast<int32_t>(index * kValues + k);
    out.SetScalar<int64_t>("index", index);
    Tensor noise = out.Allocate("noise", DType::kI64, Shape{4});
    for (int k = 0; k < 4; ++k) noise.data<int64_t>()[k] = ctx.rng().NextU32();
  }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"values", DType::kI32, Shape{kValues}}, {"index", DType::kI64, Shape{}}};
  }
};

// Sets environment variables for a scope and puts the old values back.
// Only while no loader thread runs (getenv must not race with setenv).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> values) {
    for (auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old) {
        ::setenv(name.c_str(), old->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

struct Mapping {
  uintptr_t begin = 0, end = 0;
  std::string name;
};

std::vector<Mapping> Mappings() {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, device, inode;
    Mapping m;
    in >> range >> perms >> offset >> device >> inode;
    std::getline(in >> std::ws, m.name);
    const size_t dash = range.find('-');
    m.begin = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    out.push_back(std::move(m));
  }
  return out;
}

bool IsSlotsFile(const std::string& name) { return name.rfind("/memfd:feedline-slots", 0) == 0; }

// Whether `p` lies in the batch slots' shared file (its memfd mapping).
bool InSharedSlots(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  for (const Mapping& m : Mappings()) {
    if (address >= m.begin && address < m.end) return IsSlotsFile(m.name);
  }
  return false;
}

// The bytes of this process's mappings of the slots' shared file (for the
// failure message: the reservation the loader made).
uint64_t SharedSlotsMappedBytes() {
  uint64_t bytes = 0;
  for (const Mapping& m : Mappings()) {
    if (IsSlotsFile(m.name)) bytes += m.end - m.begin;
  }
  return bytes;
}

LoaderOptions OversizedOptions(WorkerMode mode) {
  LoaderOptions options;
  options.worker_mode = mode;
  options.num_workers = 2;
  options.batch_size = kOversizedBatch;
  options.shuffle = true;
  options.seed = 5;
  return options;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

TEST(OversizedSlot, SlotsPastTheSharedReservationGiveTheBatchesOfThreadMode) {
  // 4096 ranks on this host (torchrun's variables): the slots' memory budget
  // is a 4096th of a quarter of the available memory, so the reservation is
  // its 256 MB minimum.
  ScopedEnv launcher(
      {{"RANK", "0"}, {"WORLD_SIZE", "4096"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4096"}});
  auto dataset = std::make_shared<LargeSamples>();
  DataLoader processes(dataset, OversizedOptions(WorkerMode::kProcess));
  // Every batch kept: the pool makes a slot per batch, and the later ones
  // no longer fit in the reservation.
  std::vector<Batch> kept;
  for (const Batch& b : processes) kept.push_back(b);
  ASSERT_EQ(kept.size(), static_cast<size_t>(kSamples / kOversizedBatch));
  const uint64_t reserved = SharedSlotsMappedBytes();

  int in_shared = 0, on_heap = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const Tensor& values = kept[i]["values"];
    ASSERT_EQ(values.shape(), Shape({kOversizedBatch, kValues}));
    (InSharedSlots(values.raw()) ? in_shared : on_heap) += 1;
    // Exactly the values the dataset wrote, whichever way the rows came back.
    const int32_t* v = values.data<int32_t>();
    for (int64_t r = 0; r < kOversizedBatch; ++r) {
      const int64_t index = kept[i]["index"].data<int64_t>()[r];
      int64_t wrong = 0;
      for (int64_t k = 0; k < kValues; ++k) wrong += v[r * kValues + k] != index * kValues + k;
      EXPECT_EQ(wrong, 0) << "batch " << i << " row " << r << " (sample " << index << ")";
    }
  }
  // Both kinds of slot ran: the premise of this test holds.
  EXPECT_GT(in_shared, 0);
  EXPECT_GT(on_heap, 0) << "every batch was in shared memory: the reservation (" << reserved
                        << " bytes mapped) held all " << kept.size() << " batches";

  // The same batches as thread mode, every field byte for byte.
  DataLoader threads(dataset, OversizedOptions(WorkerMode::kThread));
  size_t i = 0;
  for (const Batch& b : threads) {
    ASSERT_LT(i, kept.size());
    ASSERT_EQ(b.num_fields(), kept[i].num_fields());
    for (int f = 0; f < b.num_fields(); ++f) {
      ASSERT_EQ(b.field_name(f), kept[i].field_name(f));
      EXPECT_TRUE(SameBytes(b.field(f), kept[i].field(f)))
          << "batch " << i << " field " << b.field_name(f) << " ("
          << (InSharedSlots(kept[i].field(f).raw()) ? "shared slot" : "heap slot") << ")";
    }
    ++i;
  }
  EXPECT_EQ(i, kept.size());
  EXPECT_EQ(processes.stats().worker_restarts, 0);
}

}  // namespace
}  // namespace feedline
