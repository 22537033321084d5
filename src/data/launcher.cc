#include "feedline/launcher.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "feedline/error.h"

namespace feedline {
namespace {

// One launcher's variables, in the order DetectLaunch tries them.
struct LauncherVariables {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"paddle", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_LOCAL_RANK",
     "PADDLE_LOCAL_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    // MPICH's Hydra sets PMI_*; the local pair is its own.
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
};

using Getenv = std::function<const char*(const char*)>;

bool IsSet(const Getenv& getenv, const char* name) {
  const char* value = getenv(name);
  return value != nullptr && value[0] != '\0';
}

// The variable's value as an integer; throws naming it when it is not one.
std::optional<int64_t> ReadInt(const Getenv& getenv, const char* name, const char* source) {
  if (!IsSet(getenv, name)) return std::nullopt;
  const std::string text = getenv(name);
  // strtoll skips leading spaces and accepts a sign; require digits only
  // (one leading '-' allowed so that "-1" is reported as out of range).
  const size_t digits_from = text[0] == '-' ? 1 : 0;
  bool digits = text.size() > digits_from;
  for (size_t i = digits_from; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') digits = false;
  }
  errno = 0;
  const long long value = digits ? std::strtoll(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE) {
    throw Error(std::string("launcher environment (") + source + "): " + name + "=" + text +
                " is not an integer");
  }
  return static_cast<int64_t>(value);
}

[[noreturn]] void Inconsistent(const LauncherVariables& v, const std::string& what) {
  throw Error(std::string("launcher environment (") + v.source + "): " + what);
}

LaunchInfo FromLauncher(const Getenv& getenv, const LauncherVariables& v) {
  const std::optional<int64_t> rank = ReadInt(getenv, v.rank, v.source);
  const std::optional<int64_t> size = ReadInt(getenv, v.size, v.source);
  if (!rank) Inconsistent(v, std::string(v.size) + " is set but " + v.rank + " is not");
  if (!size) Inconsistent(v, std::string(v.rank) + " is set but " + v.size + " is not");
  const std::string rank_text = std::string(v.rank) + "=" + std::to_string(*rank);
  const std::string size_text = std::string(v.size) + "=" + std::to_string(*size);
  if (*size < 1) Inconsistent(v, size_text + " must be >= 1");
  if (*rank < 0 || *rank >= *size) {
    Inconsistent(v, rank_text + " must be in [0, " + v.size + ") with " + size_text);
  }
  LaunchInfo info;
  info.rank = *rank;
  info.world_size = *size;
  info.source = v.source;
  const std::optional<int64_t> local_rank = ReadInt(getenv, v.local_rank, v.source);
  const std::optional<int64_t> local_size = ReadInt(getenv, v.local_size, v.source);
  // Unset: the single-host guess.
  info.local_rank = local_rank.value_or(*rank);
  info.local_world_size = local_size.value_or(*size);
  const std::string local_size_text =
      std::string(v.local_size) + "=" + std::to_string(info.local_world_size) +
      (local_size ? "" : " (unset: taken from " + std::string(v.size) + ")");
  if (info.local_world_size < 1 || info.local_world_size > *size) {
    Inconsistent(v, local_size_text + " must be in [1, " + v.size + "] with " + size_text);
  }
  if (info.local_rank < 0 || info.local_rank >= info.local_world_size) {
    Inconsistent(v, std::string(v.local_rank) + "=" + std::to_string(info.local_rank) +
                        (local_rank ? "" : " (unset: taken from " + std::string(v.rank) + ")") +
                        " must be in [0, " + v.local_size + ") with " + local_size_text);
  }
  return info;
}

}  // namespace

LaunchInfo DetectLaunch(const Getenv& getenv) {
  for (const LauncherVariables& v : kLaunchers) {
    if (IsSet(getenv, v.rank) || IsSet(getenv, v.size)) return FromLauncher(getenv, v);
  }
  return LaunchInfo{};
}

LaunchInfo DetectLaunch() {
  return DetectLaunch([](const char* name) -> const char* { return std::getenv(name); });
}

LaunchInfo ResolveLaunch(std::optional<int64_t> world_size, std::optional<int64_t> rank) {
  if (world_size && *world_size < 1) {
    throw Error("num_replicas (world size) must be >= 1, got " + std::to_string(*world_size));
  }
  LaunchInfo info;
  if (world_size && rank) {
    info.world_size = *world_size;
    info.rank = *rank;
    info.source = "explicit";
    // Nothing says how the ranks are placed on hosts: the single-host guess.
    info.local_rank = *rank;
    info.local_world_size = *world_size;
  } else {
    info = DetectLaunch();
    if (world_size) info.world_size = *world_size;
    if (rank) info.rank = *rank;
  }
  if (info.rank < 0 || info.rank >= info.world_size) {
    const std::string rank_from = rank ? "the rank argument" : "the rank from " + info.source;
    const std::string size_from =
        world_size ? "num_replicas argument" : "world size from " + info.source;
    throw IndexError("rank must be in [0, " + std::to_string(info.world_size) + "), got " +
                     std::to_string(info.rank) + " (" + rank_from + ", " + size_from + ")");
  }
  if (info.local_world_size > info.world_size || info.local_rank >= info.local_world_size) {
    // A launcher's local pair that the explicit world no longer fits.
    info.local_rank = info.rank;
    info.local_world_size = info.world_size;
  }
  return info;
}

}  // namespace feedline
