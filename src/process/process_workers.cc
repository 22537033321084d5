#include "src/process/process_workers.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"
#include "src/core/sample_binder.h"
#include "src/process/child_loop.h"
#include "src/process/shared_arena.h"

namespace feedline::extension {

void WorkerProgram::RaiseError(const ErrorReply& error, int64_t index) const {
  throw SampleError(error.kind, error.source, error.message, index, error.origin);
}

void WorkerProgram::RaiseStreamDeath(int worker, const WorkerDeath& death) const {
  FailureOrigin origin;
  origin.worker_pid = death.pid;
  origin.signal = death.signal;
  throw SampleError(FailureKind::kWorkerDied, "",
                    StreamDeathMessage(worker, death) +
                        ", so its pass ends here (the items already delivered stand; the next "
                        "epoch starts a fresh worker)",
                    -1, std::move(origin));
}

std::string StreamDeathMessage(int worker, const WorkerDeath& death) {
  return "DataLoader worker process " + std::to_string(worker) + " of the IterableDataset " +
         death.Describe() + "; its iterator cannot be replayed";
}

}  // namespace feedline::extension

namespace feedline::internal {
namespace {

constexpr size_t kInitialArenaBytes = size_t{4} << 20;  // grows to twice the largest sample
constexpr auto kExitGrace = std::chrono::milliseconds(500);
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
// request abandoned more than the grace period ago has its process killed.
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

struct ProcessWorkers::Worker {
  explicit Worker(int id) : id(id) {}
  const int id;    // the engine worker it serves
  std::mutex mu;   // guards pid and fd against Shutdown and worker_pids
  pid_t pid = -1;  // GUARDED_BY(mu)
  int fd = -1;     // GUARDED_BY(mu); the parent's end of the socket
  // GUARDED_BY(mu): which process `pid` is, 1, 2, ... for each started (a
  // pid may be reused; this is not).
  int64_t serial = 0;
  // GUARDED_BY(mu): the sample replies read from process `serial`, counted
  // from 0, as WorkerProgram::OnSampleReply numbers them.
  int64_t sample_replies = 0;
  // GUARDED_BY(mu): a batch its process collated in the exchange that loaded
  // its rows (kSamplesThenCollate), until CollateIfIdle asks for it or the
  // next request drops it.
  struct CollatedAhead {
    int64_t serial = -1;
    int64_t first_reply = 0;  // it collated sample replies [first_reply, first_reply + count)
    int64_t count = 0;
    std::shared_ptr<const Sample> batch;
    std::exception_ptr error;  // what collate raised, raised by CollateIfIdle

    // Whether it is the batch of process `of`'s sample replies `replies`.
    bool Holds(int64_t of, std::span<const int64_t> replies) const {
      if ((!batch && !error) || serial != of || count != static_cast<int64_t>(replies.size())) {
        return false;
      }
      for (int64_t i = 0; i < count; ++i) {
        if (replies[static_cast<size_t>(i)] != first_reply + i) return false;
      }
      return true;
    }
  } collated_ahead;
  SharedArena arena;  // made with the first process, kept across restarts
  std::string body;
  std::string message;  // the request being sent: WorkRequest and the row's destinations
  std::span<const int64_t> batch;  // and the batch its samples belong to (SampleContext::batch)
  std::string samples;  // the body of a kSamples request
  std::vector<RowDestination> row;
  SampleReply reply;
  // The room of the kCollate request in flight (room_bytes 0: none): its
  // reply's fields there are bound into the Sample it is read into.
  uint64_t room_offset = 0;
  uint64_t room_bytes = 0;
  // The program's CheckSchema accepted reply.schema (the last schema decoded):
  // the same schema again is not checked again.
  bool schema_checked = false;
  std::vector<char> drain;
  bool died = false;  // the last process died unexpectedly: the next start is a restart
  int consecutive_deaths = 0;
  // After a timeout the engine starts a new thread for a worker whose thread
  // is stuck in Get. The new thread takes the worker over: it kills the stuck
  // process and waits until the stuck thread has left.
  std::condition_variable idle;
  bool in_use = false;      // GUARDED_BY(mu): a thread is inside LoadSample
  // When the loader abandoned the request being served (MonotonicNs), or -1.
  std::atomic<int64_t> abandoned_at_ns{-1};
  bool taken_over = false;  // GUARDED_BY(mu): that thread's process was killed for a new thread
};

namespace {

// Marks a worker in use for the duration of a LoadSample.
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

ProcessWorkers::ProcessWorkers(std::shared_ptr<WorkerProgram> program,
                               ProcessWorkerOptions options)
    : program_(std::move(program)), options_(options), spawner_(program_.get()) {
  if (options_.num_workers < 1) throw Error("process workers need num_workers >= 1");
  if (options_.use_shared_memory) {
    try {
      slots_ = std::make_shared<SharedSlotAllocator>();
    } catch (const Error&) {
      // No room to reserve the slots' address space (a ulimit -v): the slots
      // stay on the heap and the samples come back through the arenas, as
      // fast for small samples and one copy more for large ones.
      slots_.reset();
    }
  }
  collated_ = std::make_shared<CollatedBatches>(slots_);
  for (int w = 0; w < options_.num_workers; ++w) workers_.push_back(std::make_unique<Worker>(w));
}

ProcessWorkers::~ProcessWorkers() {
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

ProcessWorkers::Worker& ProcessWorkers::worker(int w) const {
  if (w < 0 || w >= options_.num_workers) {
    throw Error("worker " + std::to_string(w) + " has no process (num_workers is " +
                std::to_string(options_.num_workers) +
                "); a process-mode dataset is only called from its loader's workers");
  }
  return *workers_[static_cast<size_t>(w)];
}

bool ProcessWorkers::Start(int w, WorkerDeath* death) const {
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
  WorkerChannel channel;
  channel.worker_id = w;
  channel.num_workers = options_.num_workers;
  channel.seed = options_.seed;
  channel.parent_pid = ::getpid();
  channel.socket_fd = ends[1];
  channel.arena_fd = options_.use_shared_memory ? worker.arena.fd() : -1;
  if (slots_) {
    channel.slots_base = slots_->base();
    channel.slots_bytes = slots_->reserved();
  }
  pid_t pid;
  try {
    WorkerProgram* program = program_.get();
    pid = spawner_.Spawn([program, channel] { RunWorkerChild(channel, *program); });
  } catch (const std::exception& e) {
    for (int fd : ends) {
      UnregisterInheritedFd(fd);
      ::close(fd);
    }
    throw WorkerStartError(w, e.what());
  }
  UnregisterInheritedFd(ends[1]);
  ::close(ends[1]);
  bool closing;
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    // Shutdown sets shutdown_ before it takes each worker's lock: either it
    // sees this pid there, or this sees shutdown_ here. A process forked
    // while Shutdown ran (a restart, or a thread taking over after a
    // timeout) is ended here instead of outliving close().
    closing = shutdown_.load();
    if (!closing) {
      worker.pid = pid;
      worker.fd = ends[0];
      ++worker.serial;
      worker.sample_replies = 0;
    }
  }
  if (closing) {
    UnregisterInheritedFd(ends[0]);
    ::close(ends[0]);
    ::kill(pid, SIGKILL);
    ReapBy(pid, std::chrono::steady_clock::now() + kExitGrace);
    death->how = "was stopped: the loader is closing";
    return false;
  }
  if (worker.died) {
    worker.died = false;
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
  // The handshake: kReady once worker_init has run, or its error.
  ReplyHeader header;
  if (!ReadAll(ends[0], &header, sizeof(header))) {
    *death = Reap(worker);
    return false;
  }
  if (header.kind == static_cast<uint32_t>(ReplyKind::kReady)) return true;
  worker.body.resize(header.body_bytes);
  ErrorReply error = WorkerInitReply("the worker process sent an unexpected message at start");
  if (ReadAll(ends[0], worker.body.data(), worker.body.size())) {
    DecodeErrorReply(worker.body.data(), worker.body.size(), &error);
  }
  Stop(worker);
  throw std::runtime_error(error.message);
}

void ProcessWorkers::StartWorker(int w) const {
  Worker& worker = this->worker(w);
  {
    std::unique_lock<std::mutex> lock(worker.mu);
    if (worker.in_use) {
      // A timeout replaced the thread stuck in this worker's LoadSample: end
      // its sample's process (its result is discarded anyway) and wait for it.
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
    WorkerDeath death;
    if (Start(w, &death)) return;
    if (shutdown_.load()) return;
    worker.died = true;
    if (attempt >= options_.max_deaths_per_sample) {
      throw std::runtime_error("worker process " + std::to_string(w) + " died while starting " +
                               std::to_string(attempt) + " times; it " + death.Describe());
    }
  }
}

void ProcessWorkers::LoadSample(int64_t index, SampleContext& ctx, Sample& out) const {
  Worker& worker = this->worker(ctx.worker_id());
  InUse in_use(worker.mu, worker.idle, worker.in_use);
  worker.abandoned_at_ns.store(-1);  // a new sample: the loader wants it
  WorkRequest request;
  request.kind = static_cast<uint32_t>(RequestKind::kSample);
  request.index = index;
  request.epoch = ctx.epoch();
  request.seed = ctx.seed();
  request.context_index = ctx.index();
  EncodeRow(out, worker);
  request.destinations_bytes = static_cast<uint32_t>(worker.message.size());
  worker.batch = ctx.batch();
  request.batch_rows = worker.batch.size();
  int deaths = 0;
  while (true) {
    if (shutdown_.load()) throw SampleError(FailureKind::kCancelled, "", "the loader is closing", index);
    WorkerDeath death;
    bool alive;
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      alive = worker.pid > 0;
    }
    if (!alive) {
      if (worker.died && restarts_.load() >= options_.max_restarts) {
        throw SampleError(FailureKind::kWorkerDied, "", "worker processes were restarted " +
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
      alive = Start(ctx.worker_id(), &death);
    }
    ReplyKind kind;
    if (alive && Call(worker, request, index, &out, &ctx, &kind, &death)) {
      if (kind != ReplyKind::kSample) {
        throw Error("the worker process sent a reply of the wrong kind for sample " +
                    std::to_string(index));
      }
      worker.consecutive_deaths = 0;
      return;
    }
    if (shutdown_.load()) throw SampleError(FailureKind::kCancelled, "", "the loader is closing", index);
    if (worker.abandoned_at_ns.load() >= 0) {
      throw SampleError(FailureKind::kCancelled, "", "the loader abandoned the epoch it belonged to", index);
    }
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      if (worker.taken_over) {
        throw SampleError(FailureKind::kTimeout, "",
                          "its worker process was stopped after the loader's timeout", index);
      }
    }
    worker.died = true;
    ++worker.consecutive_deaths;
    if (++deaths >= options_.max_deaths_per_sample) {
      FailureOrigin origin;
      origin.worker_pid = death.pid;
      origin.signal = death.signal;
      throw SampleError(FailureKind::kWorkerDied, "",
                        "the worker process loading it died " + std::to_string(deaths) +
                            " times; last it " + death.Describe(),
                        index, std::move(origin));
    }
  }
}

void ProcessWorkers::EncodeRow(const Sample& out, Worker& worker) const {
  worker.message.clear();
  const SampleBindings* bindings = SampleBinder::Bindings(out);
  if (!slots_ || bindings == nullptr) return;
  worker.row.clear();
  for (const SampleBindings::Binding& b : bindings->list) {
    const int64_t offset = slots_->OffsetOf(b.destination);
    if (offset < 0) continue;  // not in the shared slots: the field comes back in the arena
    worker.row.push_back(
        RowDestination{b.name, b.dtype, b.shape, static_cast<uint64_t>(offset), b.soft});
  }
  if (!worker.row.empty()) EncodeDestinations(worker.row, &worker.message);
}

ProcessWorkers::Outcome ProcessWorkers::Exchange(int w, const WorkRequest& request, Sample* out,
                                                 SampleContext* ctx, WorkerDeath* death) const {
  Worker& worker = this->worker(w);
  if (shutdown_.load()) return Outcome::kClosing;
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    if (worker.pid <= 0) {
      death->how = "is not running";
      return Outcome::kDied;
    }
  }
  worker.abandoned_at_ns.store(-1);
  ReplyKind kind;
  if (!Call(worker, request, request.index, out, ctx, &kind, death)) {
    if (shutdown_.load()) return Outcome::kClosing;
    worker.died = true;
    return Outcome::kDied;
  }
  switch (kind) {
    case ReplyKind::kSample: return Outcome::kSample;
    case ReplyKind::kEnd: return Outcome::kEnd;
    default: return Outcome::kReady;
  }
}

bool ProcessWorkers::LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                              bool whole_batch) const {
  Worker& worker = this->worker(ctx.worker_id());
  InUse in_use(worker.mu, worker.idle, worker.in_use);
  worker.abandoned_at_ns.store(-1);  // new samples: the loader wants them
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    // Not running (it died, or never started): LoadSample restarts it.
    if (worker.pid <= 0 || shutdown_.load()) return false;
    worker.collated_ahead = Worker::CollatedAhead{};  // the loader went on without it
  }
  const bool then_collate = whole_batch && program_->CollatesInWorker();
  WorkRequest request;
  request.kind = static_cast<uint32_t>(then_collate ? RequestKind::kSamplesThenCollate
                                                    : RequestKind::kSamples);
  request.index = static_cast<int64_t>(rows.size());
  CollatedBatches::Lease batch;
  if (then_collate) {
    batch = collated_->Take();
    request.room_offset = batch.room_offset;
    request.room_bytes = batch.room_bytes;
  }
  request.epoch = epoch;
  request.seed = ctx.seed();
  worker.samples.clear();
  for (const RowLoad& row : rows) {
    EncodeRow(*row.out, worker);
    EncodeRequestedSample(row.index, row.index, worker.message, &worker.samples);
  }
  worker.message.swap(worker.samples);
  request.destinations_bytes = static_cast<uint32_t>(worker.message.size());
  worker.batch = ctx.batch();
  request.batch_rows = worker.batch.size();
  WorkerDeath death;
  bool alive = Send(worker, request, &death);
  for (size_t i = 0; alive && i < rows.size(); ++i) {
    RowLoad& row = rows[i];
    try {
      ReplyKind kind;
      alive = Receive(worker, row.index, row.out, &ctx, &kind, &death);
      if (alive && kind != ReplyKind::kSample) {
        throw Error("the worker process sent a reply of the wrong kind for sample " +
                    std::to_string(row.index));
      }
    } catch (...) {
      row.error = std::current_exception();  // this row fails alone
    }
  }
  if (alive && then_collate) alive = ReceiveCollatedAhead(worker, std::move(batch), rows.size(), &death);
  if (alive) {
    worker.consecutive_deaths = 0;
    return true;
  }
  // The process died (or was killed) with the request in flight: no reply
  // was written (the child writes them all at once, after the last sample),
  // so none of the rows is trusted.
  const bool abandoned = worker.abandoned_at_ns.load() >= 0;
  if (shutdown_.load() || abandoned) {
    for (RowLoad& row : rows) {
      row.error = std::make_exception_ptr(
          SampleError(FailureKind::kCancelled, "",
                      abandoned ? "the loader abandoned the epoch it belonged to"
                                : "the loader is closing",
                      row.index));
    }
    return true;
  }
  // Loaded again one by one, the row that kills the process is found (and
  // fails after its deaths); the others load.
  for (RowLoad& row : rows) row.error = nullptr;
  worker.died = true;
  ++worker.consecutive_deaths;
  return false;
}

std::shared_ptr<const Sample> ProcessWorkers::CollateIfIdle(
    int w, int64_t serial, std::span<const int64_t> replies) const {
  Worker& worker = this->worker(w);
  Worker::CollatedAhead ahead;
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    if (shutdown_.load() || worker.in_use || worker.pid <= 0 || worker.serial != serial) {
      return nullptr;
    }
    ahead = std::exchange(worker.collated_ahead, Worker::CollatedAhead{});
    if (!ahead.Holds(serial, replies)) worker.in_use = true;
  }
  if (ahead.Holds(serial, replies)) {
    // Collated in the exchange that loaded its rows: no round trip.
    if (ahead.error) std::rethrow_exception(ahead.error);
    return std::move(ahead.batch);
  }
  struct Release {
    Worker& worker;
    ~Release() {
      worker.room_offset = worker.room_bytes = 0;
      {
        std::lock_guard<std::mutex> lock(worker.mu);
        worker.in_use = false;
      }
      worker.idle.notify_all();
    }
  } release{worker};
  worker.abandoned_at_ns.store(-1);
  CollatedBatches::Lease batch = collated_->Take();
  // The replies listed as a kSamples request lists samples.
  worker.message.clear();
  for (int64_t reply : replies) EncodeRequestedSample(reply, reply, std::string(), &worker.message);
  WorkRequest request;
  request.kind = static_cast<uint32_t>(RequestKind::kCollate);
  request.index = static_cast<int64_t>(replies.size());
  request.destinations_bytes = static_cast<uint32_t>(worker.message.size());
  request.room_offset = worker.room_offset = batch.room_offset;
  request.room_bytes = worker.room_bytes = batch.room_bytes;
  ReplyKind kind;
  WorkerDeath death;
  if (!Send(worker, request, &death) ||
      !Receive(worker, -1, batch.sample.get(), nullptr, &kind, &death, /*batch=*/true)) {
    if (!shutdown_.load()) worker.died = true;
    return nullptr;
  }
  if (kind != ReplyKind::kSample) return nullptr;
  collated_->Saw(RoomBytesOf(*batch.sample));
  return std::move(batch.sample);
}

bool ProcessWorkers::ReceiveCollatedAhead(Worker& worker, CollatedBatches::Lease lease,
                                          size_t samples, WorkerDeath* death) const {
  worker.room_offset = lease.room_offset;
  worker.room_bytes = lease.room_bytes;
  Worker::CollatedAhead ahead;
  ReplyKind kind = ReplyKind::kEnd;
  bool alive = true;
  try {
    alive = Receive(worker, -1, lease.sample.get(), nullptr, &kind, death, /*batch=*/true);
    if (alive && kind == ReplyKind::kSample) {
      collated_->Saw(RoomBytesOf(*lease.sample));
      ahead.batch = std::move(lease.sample);
    }
  } catch (...) {
    // What collate raised in the child: the batch's failure, raised when the
    // loader collates it (CollateIfIdle), as the round trip would raise it.
    ahead.error = std::current_exception();
  }
  worker.room_offset = worker.room_bytes = 0;
  if (!alive) return false;
  if (ahead.batch || ahead.error) {  // else kEnd: the parent collates
    std::lock_guard<std::mutex> lock(worker.mu);
    ahead.serial = worker.serial;
    ahead.count = static_cast<int64_t>(samples);
    ahead.first_reply = worker.sample_replies - ahead.count;
    worker.collated_ahead = std::move(ahead);
  }
  return true;
}

uint64_t ProcessWorkers::RoomBytesOf(const Sample& batch) {
  uint64_t bytes = 0;
  for (int i = 0; i < batch.num_fields(); ++i) {
    constexpr uint64_t kAlign = SlotAllocator::kAlignment;
    bytes += (batch.field(i).bytes() + kAlign - 1) / kAlign * kAlign;
  }
  return bytes;
}

bool ProcessWorkers::Call(Worker& worker, const WorkRequest& request, int64_t index, Sample* out,
                          SampleContext* ctx, ReplyKind* kind, WorkerDeath* death) const {
  return Send(worker, request, death) && Receive(worker, index, out, ctx, kind, death);
}

bool ProcessWorkers::Send(Worker& worker, const WorkRequest& request, WorkerDeath* death) const {
  const int fd = worker.fd;  // only this thread changes it while the process lives
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(worker.mu);
    pid = worker.pid;
  }
  // The request, the row's destinations and the batch in one write (the
  // worker wakes once).
  std::string& message = worker.body;
  message.assign(reinterpret_cast<const char*>(&request), sizeof(request));
  if (request.destinations_bytes > 0) message.append(worker.message);
  if (request.batch_rows > 0) {
    message.append(reinterpret_cast<const char*>(worker.batch.data()),
                   request.batch_rows * sizeof(int64_t));
  }
  if (!WriteAll(fd, message.data(), message.size()) ||
      !WaitForReply(fd, pid, worker.abandoned_at_ns)) {
    *death = Reap(worker);
    return false;
  }
  return true;
}

bool ProcessWorkers::Receive(Worker& worker, int64_t index, Sample* out, SampleContext* ctx,
                             ReplyKind* kind, WorkerDeath* death, bool batch) const {
  const int fd = worker.fd;
  ReplyHeader header;
  if (!ReadAll(fd, &header, sizeof(header))) {
    *death = Reap(worker);
    return false;
  }
  worker.body.resize(header.body_bytes);
  if (!ReadAll(fd, worker.body.data(), worker.body.size())) {
    *death = Reap(worker);
    return false;
  }
  *kind = static_cast<ReplyKind>(header.kind);
  switch (*kind) {
    case ReplyKind::kReady:
    case ReplyKind::kEnd:
      return true;
    case ReplyKind::kError: {
      ErrorReply error;
      if (!DecodeErrorReply(worker.body.data(), worker.body.size(), &error)) {
        error = ExceptionReply("the worker process sent a malformed error");
      }
      program_->RaiseError(error, index);
    }
    case ReplyKind::kSample:
      break;
    default:
      throw Error("the worker process sent a reply of unknown kind " +
                  std::to_string(header.kind));
  }
  if (out == nullptr) throw Error("the worker process sent a sample where none was asked for");
  if (!batch) {
    int64_t serial;
    {
      std::lock_guard<std::mutex> lock(worker.mu);
      serial = worker.serial;
      ++worker.sample_replies;
    }
    program_->OnSampleReply(worker.id, serial, out);
  }
  return ReadSample(worker, fd, header.payload_bytes, *out, ctx, death, batch);
}

bool ProcessWorkers::ReadSample(Worker& worker, int fd, uint64_t payload_bytes, Sample& out,
                                SampleContext* ctx, WorkerDeath* death, bool batch) const {
  SampleReply& reply = worker.reply;
  if (!DecodeSampleReply(worker.body.data(), worker.body.size(), &reply)) {
    throw Error("the worker process sent a malformed sample reply");
  }
  uint64_t payload_left = payload_bytes;
  try {
    // A worker sends its schema with every sample, nearly always the one
    // it sent before: checked once, not per sample on the round trip's path.
    if (batch) {
      worker.schema_checked = false;  // the next sample's schema follows another
    } else if (!reply.schema_repeated || !worker.schema_checked) {
      worker.schema_checked = false;
      program_->CheckSchema(reply.schema);
      worker.schema_checked = true;
    }
    if (ctx != nullptr) {
      for (int s = 0; s < kNumStages; ++s) {
        ctx->AddStageTime(static_cast<Stage>(s), reply.stage_ns[s]);
      }
      ctx->CountImagesDecoded(reply.images_decoded);
    }
    if (options_.use_shared_memory) worker.arena.MapAtLeast(reply.arena_bytes);
    for (const FieldMeta& f : reply.fields) {
      if (f.in_place && worker.room_bytes > 0) {
        // Written into the request's room: the field is bound there, so
        // Allocate below gives that memory and nothing is copied.
        if (f.offset < worker.room_offset || f.offset > worker.room_offset + worker.room_bytes ||
            f.bytes > worker.room_offset + worker.room_bytes - f.offset) {
          throw Error("field '" + f.name + "' lies outside the collated batch's room");
        }
        SampleBinder::Bind(out, f.name, f.dtype, f.shape, slots_->base() + f.offset);
      }
      Tensor tensor = out.Allocate(f.name, f.dtype, f.shape);
      if (tensor.bytes() != f.bytes) throw Error("field '" + f.name + "' has a wrong byte count");
      if (f.in_place) {
        // Written by the process into the row the request named (or the
        // room), which is where Allocate points for a bound field of this
        // dtype and shape.
        if (!slots_ || f.offset > slots_->reserved() || f.bytes > slots_->reserved() - f.offset) {
          throw Error("field '" + f.name + "' lies outside the shared batch slots");
        }
        const std::byte* written = slots_->base() + f.offset;
        if (static_cast<const std::byte*>(tensor.raw()) != written && f.bytes > 0) std::memcpy(tensor.raw(), written, f.bytes);
        continue;
      }
      if (options_.use_shared_memory) {
        if (f.offset + f.bytes > worker.arena.size()) {
          throw Error("field '" + f.name + "' lies outside the worker's shared arena");
        }
        if (f.bytes > 0) std::memcpy(tensor.raw(), worker.arena.data() + f.offset, f.bytes);
      } else {
        // The payload holds the fields at their offsets; read up to this one's end.
        const uint64_t consumed = payload_bytes - payload_left;
        if (f.offset < consumed || f.offset + f.bytes > payload_bytes) {
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
    // Keep the stream in step for the next request.
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

pid_t ProcessWorkers::Detach(Worker& worker) const {
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

WorkerDeath ProcessWorkers::Reap(Worker& worker) const {
  const pid_t pid = Detach(worker);
  WorkerDeath death;
  death.how = "ended";
  if (pid > 0) {
    // End of file comes as the process exits; the exit status follows at once.
    const ProcessEnd end = ReapBy(pid, std::chrono::steady_clock::now() + kExitGrace);
    death.how = DescribeEnd(pid, end);
    death.pid = pid;
    if (end.known && WIFSIGNALED(end.status)) death.signal = WTERMSIG(end.status);
  }
  oom_kills_.Check(&death);
  return death;
}

void ProcessWorkers::Stop(Worker& worker) const {
  const pid_t pid = Detach(worker);
  if (pid > 0) ReapBy(pid, std::chrono::steady_clock::now() + kExitGrace);
}

void ProcessWorkers::AbandonInFlight() const {
  const int64_t now = MonotonicNs();
  for (const auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    if (worker->in_use) worker->abandoned_at_ns.store(now);
  }
}

void ProcessWorkers::Shutdown() const {
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
  // Idle workers exit on end of file; a busy worker is killed after the
  // grace period.
  const auto deadline = std::chrono::steady_clock::now() + kExitGrace;
  for (pid_t pid : pids) ReapBy(pid, deadline);
}

std::vector<int64_t> ProcessWorkers::worker_pids() const {
  std::vector<int64_t> pids;
  for (const auto& worker : workers_) {
    std::lock_guard<std::mutex> lock(worker->mu);
    pids.push_back(worker->pid);
  }
  return pids;
}

}  // namespace feedline::internal
