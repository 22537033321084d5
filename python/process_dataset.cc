#include "python/process_dataset.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "feedline/error.h"
#include "python/shared_arena.h"
#include "python/worker_process.h"
#include "python/worker_protocol.h"

namespace feedline::python {
namespace {

constexpr size_t kInitialArenaBytes = size_t{4} << 20;  // grows to twice the largest sample
constexpr auto kExitGrace = std::chrono::milliseconds(500);

// The kernel's count of OOM kills in this process's cgroup (v2
// memory.events, v1 memory.oom_control), or -1 where neither is readable.
int64_t ReadOomKills() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    std::ifstream cgroup("/proc/self/cgroup");
    std::string line;
    while (std::getline(cgroup, line)) {
      if (line.rfind("0::", 0) == 0) {
        std::string dir = line.substr(3);
        if (dir != "/") out.push_back("/sys/fs/cgroup" + dir + "/memory.events");
      }
    }
    out.push_back("/sys/fs/cgroup/memory.events");
    out.push_back("/sys/fs/cgroup/memory/memory.oom_control");
    return out;
  }();
  for (const std::string& path : paths) {
    std::ifstream in(path);
    std::string key;
    int64_t value;
    while (in >> key >> value) {
      if (key == "oom_kill") return value;
    }
  }
  return -1;
}

std::string SignalName(int sig) {
  const char* name = ::strsignal(sig);
  return "signal " + std::to_string(sig) + (name != nullptr ? std::string(" (") + name + ")" : "");
}

}  // namespace

struct ProcessDataset::Worker {
  std::mutex mu;   // guards pid and fd against Shutdown and worker_pids
  pid_t pid = -1;  // GUARDED_BY(mu)
  int fd = -1;     // GUARDED_BY(mu); the parent's end of the socket
  SharedArena arena;  // made with the first process, kept across restarts
  std::string body;
  SampleReply reply;
  std::vector<char> drain;
  bool died = false;  // the last process died unexpectedly: the next start is a restart
  int consecutive_deaths = 0;
  // After a timeout the engine starts a new thread for a worker whose thread
  // is stuck in Get. The new thread takes the worker over: it kills the stuck
  // process and waits until the stuck thread has left.
  std::condition_variable idle;
  bool in_use = false;      // GUARDED_BY(mu): a thread is inside Get
  // When the loader abandoned the sample being loaded (MonotonicNs), or -1.
  std::atomic<int64_t> abandoned_at_ns{-1};
  bool taken_over = false;  // GUARDED_BY(mu): that thread's process was killed for a new thread
};

namespace {

// Marks a worker in use for the duration of a Get.
class InUse {
 public:
  InUse(std::mutex& mu, std::condition_variable& idle, bool& flag)
      : mu_(mu), idle_(idle), flag_(flag) {
    std::lock_guard<std::mutex> lock(mu_);
    flag_ = true;
  }
  ~InUse() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      flag_ = false;
    }
    idle_.notify_all();
  }

 private:
  std::mutex& mu_;
  std::condition_variable& idle_;
  bool& flag_;
};

}  // namespace

struct ProcessDataset::Death {
  std::string how;  // "was killed by signal 9 (Killed)", "exited with status 1"
  bool killed_by_oom = false;
  int64_t oom_before = -1;
  int64_t oom_after = -1;

  std::string Describe() const {
    std::string out = how;
    if (oom_after < 0) {
      out += "; the cgroup's OOM kill count is not readable here";
    } else if (killed_by_oom) {
      out += "; the kernel's OOM killer acted meanwhile (cgroup memory.events oom_kill " +
             std::to_string(oom_before) + " -> " + std::to_string(oom_after) +
             "): the worker probably ran out of memory";
    } else {
      out += "; not the OOM killer (cgroup oom_kill count unchanged)";
    }
    return out;
  }
};

ProcessDataset::ProcessDataset(py::object dataset, py::object worker_init_fn,
                               ProcessWorkerOptions options, std::shared_ptr<Structure> structure)
    : dataset_(std::make_shared<PyRef>(dataset)),
      worker_init_fn_(std::make_shared<PyRef>(std::move(worker_init_fn))),
      size_(static_cast<int64_t>(py::len(dataset))),
      options_(options),
      structure_(std::move(structure)),
      oom_kills_seen_(ReadOomKills()) {
  if (options_.num_workers < 1) throw Error("process workers need num_workers >= 1");
  for (int w = 0; w < options_.num_workers; ++w) workers_.push_back(std::make_unique<Worker>());
}

ProcessDataset::~ProcessDataset() {
  Shutdown();
  for (auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    if (worker->fd >= 0) {
      UnregisterInheritedFd(worker->fd);
      ::close(worker->fd);
      worker->fd = -1;
    }
    if (worker->arena.fd() >= 0) UnregisterInheritedFd(worker->arena.fd());
  }
}

std::string ProcessDataset::Source(int64_t index) const {
  py::gil_scoped_acquire gil;
  try {
    if (py::hasattr(dataset_->get(), "source")) {
      return py::str(dataset_->get().attr("source")(index));
    }
  } catch (py::error_already_set&) {
    // A source is a courtesy for messages; its failure must not hide the error.
  }
  return {};
}

bool ProcessDataset::Start(int w, Death* death) const {
  Worker& worker = *workers_[static_cast<size_t>(w)];
  if (options_.use_shared_memory && worker.arena.fd() < 0) {
    worker.arena = SharedArena::Create("feedline-worker", kInitialArenaBytes);
    RegisterInheritedFd(worker.arena.fd());
  }
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw Error(std::string("socketpair for a worker process failed: ") + std::strerror(errno));
  }
  RegisterInheritedFd(ends[0]);
  RegisterInheritedFd(ends[1]);
  WorkerProcessConfig config;
  config.worker_id = w;
  config.num_workers = options_.num_workers;
  config.seed = options_.seed;
  config.parent_pid = ::getpid();
  config.socket_fd = ends[1];
  config.arena_fd = options_.use_shared_memory ? worker.arena.fd() : -1;
  config.dataset = dataset_;
  config.worker_init_fn = worker_init_fn_;
  pid_t pid;
  try {
    pid = spawner_.Spawn([config] { RunWorkerProcess(config); });
  } catch (...) {
    for (int fd : ends) {
      UnregisterInheritedFd(fd);
      ::close(fd);
    }
    throw;
  }
  UnregisterInheritedFd(ends[1]);
  ::close(ends[1]);
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    worker.pid = pid;
    worker.fd = ends[0];
  }
  if (worker.died) {
    worker.died = false;
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
  // The handshake: kReady once worker_init_fn has run, or its error.
  ReplyHeader header;
  if (!ReadAll(ends[0], &header, sizeof(header))) {
    *death = Reap(worker);
    return false;
  }
  if (header.kind == static_cast<uint32_t>(ReplyKind::kReady)) return true;
  worker.body.resize(header.body_bytes);
  ErrorReply error{"", "the worker process sent an unexpected message at start"};
  if (ReadAll(ends[0], worker.body.data(), worker.body.size())) {
    DecodeErrorReply(worker.body.data(), worker.body.size(), &error);
  }
  Stop(worker);
  throw std::runtime_error(error.message);
}

void ProcessDataset::StartWorker(int w) const {
  if (w < 0 || w >= options_.num_workers) {
    throw Error("worker " + std::to_string(w) + " has no process (num_workers is " +
                std::to_string(options_.num_workers) + ")");
  }
  Worker& worker = *workers_[static_cast<size_t>(w)];
  {
    std::unique_lock<std::mutex> lock(worker.mu);
    if (worker.in_use) {
      // A timeout replaced the thread stuck in this worker's Get: end its
      // sample's process (its result is discarded anyway) and wait for it.
      worker.taken_over = true;
      if (worker.pid > 0) ::kill(worker.pid, SIGKILL);
      worker.idle.wait(lock, [&] { return !worker.in_use; });
      worker.taken_over = false;
    } else if (worker.pid > 0 && options_.persistent_workers) {
      return;
    }
  }
  Stop(worker);  // a fresh process per epoch, as torch does without persistent workers
  for (int attempt = 1;; ++attempt) {
    if (shutdown_.load()) return;
    Death death;
    if (Start(w, &death)) return;
    worker.died = true;
    if (attempt >= options_.max_deaths_per_sample) {
      throw std::runtime_error("worker process " + std::to_string(w) + " died while starting " +
                               std::to_string(attempt) + " times; it " + death.Describe());
    }
  }
}

namespace {

// Raises, as a PyInterrupt, the interrupt a worker process's __getitem__
// raised (KeyboardInterrupt, SystemExit, GeneratorExit or MemoryError), so
// that it passes through the loader as it does with thread workers.
[[noreturn]] void ThrowInterrupt(const std::string& type, const std::string& message) {
  py::gil_scoped_acquire gil;
  PyObject* kind = type == "SystemExit"      ? PyExc_SystemExit
                   : type == "GeneratorExit" ? PyExc_GeneratorExit
                   : type == "MemoryError"   ? PyExc_MemoryError
                                             : PyExc_KeyboardInterrupt;
  PyErr_SetString(kind, message.c_str());
  throw PyInterrupt{py::error_already_set()};
}

}  // namespace

void ProcessDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size_);
  const int w = ctx.worker_id();
  if (w < 0 || w >= options_.num_workers) {
    throw Error("a process-mode dataset was called outside a loader worker (worker id " +
                std::to_string(w) + ")");
  }
  Worker& worker = *workers_[static_cast<size_t>(w)];
  InUse in_use(worker.mu, worker.idle, worker.in_use);
  worker.abandoned_at_ns.store(-1);  // a new sample: the loader wants it
  int deaths = 0;
  while (true) {
    if (shutdown_.load()) throw SampleError("cancelled", "", "the loader is closing", index);
    Death death;
    bool alive;
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      alive = worker.pid > 0;
    }
    if (!alive) {
      if (worker.died && restarts_.load() >= options_.max_restarts) {
        throw SampleError("worker died", "", "worker processes were restarted " +
                                                 std::to_string(restarts_.load()) +
                                                 " times, the limit; not restarting again",
                          index);
      }
      // Back off when the same worker keeps dying: 0, 25, 50, 100 ... 1000 ms.
      if (worker.consecutive_deaths >= 2) {
        const int shift = std::min(worker.consecutive_deaths - 2, 6);
        std::this_thread::sleep_for(
            std::min(std::chrono::milliseconds(25 << shift), std::chrono::milliseconds(1000)));
      }
      alive = Start(w, &death);
    }
    if (alive && Load(worker, index, ctx, out, &death)) {
      worker.consecutive_deaths = 0;
      return;
    }
    if (shutdown_.load()) throw SampleError("cancelled", "", "the loader is closing", index);
    if (worker.abandoned_at_ns.load() >= 0) {
      throw SampleError("cancelled", "", "the loader abandoned the epoch it belonged to", index);
    }
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      if (worker.taken_over) {
        throw SampleError("timeout", "",
                          "its worker process was stopped after the loader's timeout", index);
      }
    }
    worker.died = true;
    ++worker.consecutive_deaths;
    if (++deaths >= options_.max_deaths_per_sample) {
      throw SampleError("worker died", "",
                        "the worker process loading it died " + std::to_string(deaths) +
                            " times; last it " + death.Describe(),
                        index);
    }
  }
}

namespace {

// How often a wait for a reply checks that the worker process still lives.
constexpr int kLivenessPollMs = 100;
// How long a sample the loader abandoned may still run before its process is
// killed: most finish within it, and a restart costs a fork.
constexpr int64_t kAbandonGraceNs = 200'000'000;

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits until `fd` has data or `pid` has exited; false for the latter. A
// closed socket is not enough to see a death: a process the dataset itself
// forked inherits the socket and keeps it open after the worker died.
// waitid(WNOWAIT) looks without reaping, so Reap still gets the status. A
// sample abandoned more than the grace period ago has its process killed.
bool WaitForReply(int fd, pid_t pid, const std::atomic<int64_t>& abandoned_at_ns) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, kLivenessPollMs);
    if (ready > 0) return true;  // data, or end of file: ReadAll tells which
    if (ready < 0 && errno != EINTR) return false;
    if (pid <= 0) return true;
    const int64_t abandoned = abandoned_at_ns.load();
    if (abandoned >= 0 && MonotonicNs() - abandoned > kAbandonGraceNs) {
      ::kill(pid, SIGKILL);
      return false;
    }
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      return false;
    }
  }
}

}  // namespace

bool ProcessDataset::Load(Worker& worker, int64_t index, SampleContext& ctx, Sample& out,
                          Death* death) const {
  const int fd = worker.fd;  // only this thread changes it while the process lives
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    pid = worker.pid;
  }
  const WorkRequest request{index, ctx.epoch(), ctx.seed()};
  ReplyHeader header;
  if (!WriteAll(fd, &request, sizeof(request)) || !WaitForReply(fd, pid, worker.abandoned_at_ns) ||
      !ReadAll(fd, &header, sizeof(header))) {
    *death = Reap(worker);
    return false;
  }
  worker.body.resize(header.body_bytes);
  if (!ReadAll(fd, worker.body.data(), worker.body.size())) {
    *death = Reap(worker);
    return false;
  }
  if (header.kind == static_cast<uint32_t>(ReplyKind::kError)) {
    ErrorReply error;
    if (!DecodeErrorReply(worker.body.data(), worker.body.size(), &error)) {
      error = {"exception", "the worker process sent a malformed error"};
    }
    if (error.reason.rfind(kInterruptReason, 0) == 0) {
      ThrowInterrupt(error.reason.substr(sizeof(kInterruptReason) - 1), error.message);
    }
    throw SampleError(error.reason, "", error.message, index);
  }
  SampleReply& reply = worker.reply;
  if (header.kind != static_cast<uint32_t>(ReplyKind::kSample) ||
      !DecodeSampleReply(worker.body.data(), worker.body.size(), &reply)) {
    throw Error("the worker process sent a malformed reply for sample " + std::to_string(index));
  }
  uint64_t payload_left = header.payload_bytes;
  try {
    std::vector<std::string> names;
    names.reserve(reply.fields.size());
    for (const FieldMeta& f : reply.fields) names.push_back(f.name);
    structure_->Observe(static_cast<Structure::Kind>(reply.layout), names);
    if (options_.use_shared_memory) worker.arena.MapAtLeast(reply.arena_bytes);
    for (const FieldMeta& f : reply.fields) {
      Tensor tensor = out.Allocate(f.name, f.dtype, f.shape);
      if (tensor.bytes() != f.bytes) throw Error("field '" + f.name + "' has a wrong byte count");
      if (options_.use_shared_memory) {
        if (f.offset + f.bytes > worker.arena.size()) {
          throw Error("field '" + f.name + "' lies outside the worker's shared arena");
        }
        if (f.bytes > 0) std::memcpy(tensor.raw(), worker.arena.data() + f.offset, f.bytes);
      } else {
        // The payload holds the fields at their offsets; read up to this one's end.
        const uint64_t consumed = header.payload_bytes - payload_left;
        if (f.offset < consumed || f.offset + f.bytes > header.payload_bytes) {
          throw Error("field '" + f.name + "' lies outside the payload");
        }
        uint64_t gap = f.offset - consumed;
        worker.drain.resize(std::max<size_t>(worker.drain.size(), gap));
        if (!ReadAll(fd, worker.drain.data(), gap) || !ReadAll(fd, tensor.raw(), f.bytes)) {
          payload_left = 0;
          *death = Reap(worker);
          return false;
        }
        payload_left -= gap + f.bytes;
      }
    }
  } catch (...) {
    // Keep the stream in step for the next sample.
    while (payload_left > 0) {
      worker.drain.resize(std::max<size_t>(worker.drain.size(), 1 << 16));
      const size_t n = std::min<uint64_t>(payload_left, worker.drain.size());
      if (!ReadAll(fd, worker.drain.data(), n)) break;
      payload_left -= n;
    }
    throw;
  }
  while (payload_left > 0) {  // alignment padding after the last field
    worker.drain.resize(std::max<size_t>(worker.drain.size(), payload_left));
    if (!ReadAll(fd, worker.drain.data(), payload_left)) break;
    payload_left = 0;
  }
  return true;
}

namespace {

// How a reaped process ended.
struct Ended {
  bool known = false;   // the status below is the process's (waitpid found it)
  int status = 0;
  bool killed = false;  // still running at the deadline: killed and reaped
};

// Reaps `pid`, waiting until `deadline` for it to exit by itself, then
// killing it.
Ended ReapBy(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  Ended ended;
  pid_t done;
  while ((done = ::waitpid(pid, &ended.status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      done = ::waitpid(pid, &ended.status, 0);
      ended.killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ended.known = done == pid;
  return ended;
}

}  // namespace

pid_t ProcessDataset::Detach(Worker& worker) const {
  std::lock_guard<std::mutex> lock(worker.mu);
  const pid_t pid = worker.pid;
  worker.pid = -1;
  if (worker.fd >= 0) {
    UnregisterInheritedFd(worker.fd);
    ::close(worker.fd);  // an idle worker reads end of file and exits
    worker.fd = -1;
  }
  return pid;
}

ProcessDataset::Death ProcessDataset::Reap(Worker& worker) const {
  const pid_t pid = Detach(worker);
  Death death;
  death.how = "ended";
  if (pid > 0) {
    // End of file comes as the process exits; the exit status follows at once.
    const Ended ended = ReapBy(pid, std::chrono::steady_clock::now() + kExitGrace);
    if (ended.killed) {
      death.how = "stopped answering and was killed";  // closed its socket but lived on
    } else if (ended.known && WIFSIGNALED(ended.status)) {
      death.how = "was killed by " + SignalName(WTERMSIG(ended.status));
    } else if (ended.known && WIFEXITED(ended.status)) {
      death.how = "exited with status " + std::to_string(WEXITSTATUS(ended.status));
    }
    death.how = "(pid " + std::to_string(pid) + ") " + death.how;
  }
  const int64_t after = ReadOomKills();
  death.oom_before = oom_kills_seen_.exchange(after);
  death.oom_after = after;
  death.killed_by_oom = after >= 0 && death.oom_before >= 0 && after > death.oom_before;
  return death;
}

void ProcessDataset::Stop(Worker& worker) const {
  const pid_t pid = Detach(worker);
  if (pid > 0) ReapBy(pid, std::chrono::steady_clock::now() + kExitGrace);
}

void ProcessDataset::AbandonInFlight() const {
  const int64_t now = MonotonicNs();
  for (const auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    if (worker->in_use) worker->abandoned_at_ns.store(now);
  }
}

void ProcessDataset::Shutdown() const {
  shutdown_.store(true);
  std::vector<pid_t> pids;
  for (const auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    // shutdown, not close: a thread may be blocked on the socket; this wakes
    // it with end of file, and the descriptor is closed after it left.
    if (worker->fd >= 0) ::shutdown(worker->fd, SHUT_RDWR);
    if (worker->pid > 0) pids.push_back(worker->pid);
    worker->pid = -1;
  }
  // Idle workers exit on end of file; a worker busy in __getitem__ is killed
  // after the grace period.
  const auto deadline = std::chrono::steady_clock::now() + kExitGrace;
  for (pid_t pid : pids) ReapBy(pid, deadline);
}

std::vector<int64_t> ProcessDataset::worker_pids() const {
  std::vector<int64_t> pids;
  for (const auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    pids.push_back(worker->pid);
  }
  return pids;
}

bool UseWorkerProcesses(const std::string& mode, bool native, bool iterable, int num_workers) {
  if (mode != "thread" && mode != "process" && mode != "auto") {
    throw Error("worker_mode must be \"thread\", \"process\" or \"auto\", got \"" + mode + "\"");
  }
  if (mode == "process" && native) {
    throw Error(
        "worker_mode=\"process\" is for Python map-style datasets; this native dataset runs "
        "without the GIL on worker threads (use worker_mode=\"thread\" or \"auto\")");
  }
  if (mode == "process" && iterable) {
    throw Error(
        "worker_mode=\"process\" does not support an IterableDataset yet; use "
        "worker_mode=\"thread\" or \"auto\"");
  }
  if (mode == "thread" || native || iterable) return false;
  return num_workers > 0;
}

}  // namespace feedline::python
