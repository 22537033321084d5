// Loads with feedline on every rank of an mpirun job and checks coverage with
// MPI collectives: the launcher variables OpenMPI sets give the rank and world
// size MPI reports; every epoch covers the dataset with equal steps (pad), or
// exactly once (pad = false); and an epoch checkpointed by all ranks resumes
// on fewer ranks with every remaining sample seen exactly once.
//
//   mpirun -np 4 --oversubscribe --allow-run-as-root feedline_mpi_coverage
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "feedline/feedline.h"
#include "feedline/synth/index_dataset.h"

namespace {

constexpr int64_t kSamples = 1003;
constexpr int64_t kBatch = 16;

int failures = 0;

void Check(bool ok, const std::string& what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
    ++failures;
  }
}

// Loads `batches` batches (all when < 0) of `epoch` on this rank; adds one to
// counts[i] for every sample i; returns the batches taken.
int64_t Load(std::shared_ptr<feedline::DistributedBatchSampler> sampler, int64_t epoch,
             int64_t batches, std::vector<int64_t>& counts) {
  feedline::LoaderOptions options;
  options.batch_sampler = sampler;
  options.num_workers = 1;
  sampler->set_epoch(epoch);
  feedline::DataLoader loader(std::make_shared<feedline::synth::IndexDataset>(kSamples), options);
  int64_t taken = 0;
  for (const feedline::Batch& batch : loader) {
    if (batches >= 0 && taken == batches) break;
    const int64_t* index = batch["index"].data<int64_t>();
    for (int64_t r = 0; r < batch.size(); ++r) ++counts[static_cast<size_t>(index[r])];
    ++taken;
  }
  return taken;
}

std::vector<int64_t> Sum(const std::vector<int64_t>& mine, MPI_Comm comm) {
  std::vector<int64_t> all(mine.size());
  MPI_Allreduce(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_SUM, comm);
  return all;
}

int64_t Reduce(int64_t value, MPI_Op op, MPI_Comm comm) {
  int64_t out = 0;
  MPI_Allreduce(&value, &out, 1, MPI_INT64_T, op, comm);
  return out;
}

void RunChecks(int rank, int world) {
  const feedline::LaunchInfo launch = feedline::ResolveLaunch(std::nullopt, std::nullopt);
  Check(launch.rank == rank && launch.world_size == world,
        "the launcher variables (" + launch.source + ") give rank " + std::to_string(launch.rank) +
            " of " + std::to_string(launch.world_size),
        rank);
  Check(launch.source == "openmpi", "source is " + launch.source, rank);

  for (auto partition :
       {feedline::DistributedPartition::kPaddle, feedline::DistributedPartition::kTorch}) {
    const std::string name =
        partition == feedline::DistributedPartition::kPaddle ? "paddle" : "torch";
    for (bool pad : {true, false}) {
      feedline::DistributedBatchSampler::Options o;
      o.shuffle = true;
      o.seed = 3;
      o.partition = partition;
      o.pad = pad;
      auto sampler = std::make_shared<feedline::DistributedBatchSampler>(kSamples, kBatch, world,
                                                                         launch.rank, o);
      std::vector<int64_t> counts(kSamples, 0);
      const int64_t steps = Load(sampler, 2, -1, counts);
      const std::vector<int64_t> all = Sum(counts, MPI_COMM_WORLD);
      int64_t total = 0, missing = 0, repeated = 0;
      for (int64_t c : all) {
        total += c;
        missing += c == 0;
        repeated += c > 1;
      }
      const std::string what = name + (pad ? " pad" : " exact");
      Check(missing == 0, what + ": " + std::to_string(missing) + " samples missed", rank);
      const int64_t min_steps = Reduce(steps, MPI_MIN, MPI_COMM_WORLD);
      const int64_t max_steps = Reduce(steps, MPI_MAX, MPI_COMM_WORLD);
      if (pad) {
        Check(total == (kSamples + world - 1) / world * world, what + ": total", rank);
        Check(min_steps == max_steps, what + ": unequal steps", rank);
      } else {
        Check(total == kSamples && repeated == 0,
              what + ": " + std::to_string(total) + " samples seen", rank);
        Check(max_steps - min_steps <= 1, what + ": steps differ by more than one", rank);
      }
    }
  }

  // Resume on fewer ranks: all ranks take 5 batches of epoch 1 (pad = false),
  // then ranks 0..world-2 finish the epoch from the global position.
  feedline::DistributedBatchSampler::Options o;
  o.shuffle = true;
  o.seed = 9;
  o.pad = false;
  std::vector<int64_t> counts(kSamples, 0);
  auto before =
      std::make_shared<feedline::DistributedBatchSampler>(kSamples, kBatch, world, launch.rank, o);
  const int64_t taken = Load(before, 1, 5, counts);
  const int64_t position = before->GlobalPosition(1, taken);
  Check(Reduce(position, MPI_MIN, MPI_COMM_WORLD) == Reduce(position, MPI_MAX, MPI_COMM_WORLD),
        "ranks disagree on the global position", rank);
  const int smaller = world > 1 ? world - 1 : 1;
  MPI_Comm survivors;
  MPI_Comm_split(MPI_COMM_WORLD, rank < smaller ? 0 : MPI_UNDEFINED, rank, &survivors);
  if (rank < smaller) {
    o.resume_epoch = 1;
    o.resume_position = position;
    auto after =
        std::make_shared<feedline::DistributedBatchSampler>(kSamples, kBatch, smaller, rank, o);
    Load(after, 1, -1, counts);
    MPI_Comm_free(&survivors);
  }
  const std::vector<int64_t> all = Sum(counts, MPI_COMM_WORLD);
  int64_t wrong = 0;
  for (int64_t c : all) wrong += c != 1;
  Check(wrong == 0,
        "resume from " + std::to_string(world) + " to " + std::to_string(smaller) +
            " ranks: " + std::to_string(wrong) + " samples not seen exactly once",
        rank);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  try {
    RunChecks(rank, world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);  // the others may wait in a collective
  }
  const int64_t failed = Reduce(failures, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("mpi_coverage: %d ranks, %s\n", world,
                failed == 0 ? "every check passed" : "FAILED");
  }
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
