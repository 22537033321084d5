// Where this process stands in a distributed job: its rank and the world
// size, read from explicit arguments or from the environment a launcher
// (torchrun, paddle.distributed.launch, mpirun) sets. No process group or
// communication library is needed: only environment variables are read.
//
// Thread safety: DetectLaunch reads the environment and must not race with
// setenv; LaunchInfo is a plain value.
//
// Example:
//   LaunchInfo launch = ResolveLaunch(std::nullopt, std::nullopt);  // as a launcher set it
//   DistributedBatchSampler sampler(n, 64, launch.world_size, launch.rank);
#ifndef FEEDLINE_LAUNCHER_H_
#define FEEDLINE_LAUNCHER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "feedline/export.h"

namespace feedline {

struct FEEDLINE_EXPORT LaunchInfo {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;        // rank among the processes of this host
  int64_t local_world_size = 1;  // processes on this host
  // Where the values came from: "explicit", "torchrun", "paddle", "openmpi",
  // "pmi" or "single" (nothing set: one process).
  std::string source = "single";
};

// Reads the launcher variables, first match wins (docs/distributed.md):
//   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   paddle    PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_LOCAL_RANK, PADDLE_LOCAL_SIZE
//   openmpi   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//             OMPI_COMM_WORLD_LOCAL_SIZE
//   pmi       PMI_RANK, PMI_SIZE (MPI_LOCALRANKID, MPI_LOCALNRANKS when set)
// A launcher counts as present when its rank or its size variable is set
// (non-empty). The local pair, when the launcher does not set it, is the
// single-host guess (local_rank = rank, local_world_size = world_size).
// Throws Error naming the variable when a value is not an integer, a rank
// or size variable is missing from its pair, or the values are inconsistent
// (RANK >= WORLD_SIZE, WORLD_SIZE < 1, LOCAL_RANK >= LOCAL_WORLD_SIZE).
FEEDLINE_EXPORT LaunchInfo DetectLaunch();

// The same, reading variables through `getenv` (nullptr = unset), for tests
// and for callers with their own environment.
FEEDLINE_EXPORT LaunchInfo DetectLaunch(const std::function<const char*(const char*)>& getenv);

// Explicit arguments first: each of world_size and rank that is given wins
// over the environment; a missing one comes from DetectLaunch(). source is
// "explicit" when both are given. Throws Error for world_size < 1 and
// IndexError for a rank outside [0, world_size), naming which value (the
// argument or the variable) is wrong.
FEEDLINE_EXPORT LaunchInfo ResolveLaunch(std::optional<int64_t> world_size,
                                         std::optional<int64_t> rank);

}  // namespace feedline

#endif  // FEEDLINE_LAUNCHER_H_
