#include "python/worker_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "python/process_spawner.h"
#include "python/python_seeding.h"
#include "python/shared_arena.h"
#include "python/worker_protocol.h"

namespace feedline::python {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kGrowStep = size_t{1} << 20;

size_t AlignUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Where the child puts a sample's arrays: the shared arena, or a buffer that
// follows the metadata through the socket.
class Staging {
 public:
  explicit Staging(int arena_fd) {
    if (arena_fd >= 0) arena_ = SharedArena::Attach(arena_fd);
    shared_ = arena_fd >= 0;
  }

  void Clear() { used_ = 0; }

  // Room for `bytes` more bytes; the returned offset stays valid (the memory
  // may move when it grows, so callers keep offsets, not pointers).
  size_t Take(size_t bytes) {
    const size_t offset = AlignUp(used_, kAlign);
    const size_t needed = offset + bytes;
    if (shared_) {
      if (needed > arena_.size()) {
        const size_t grown = AlignUp(std::max(needed, arena_.size() * 2), kGrowStep);
        std::string error;
        if (!arena_.Reserve(grown, &error)) {
          throw SampleError("memory", "",
                            "the worker's shared memory cannot grow to " +
                                std::to_string(grown >> 20) + " MB: " + error);
        }
      }
    } else if (needed > buffer_.size()) {
      buffer_.resize(AlignUp(std::max(needed, buffer_.size() * 2), kGrowStep));
    }
    used_ = needed;
    return offset;
  }

  char* data() { return shared_ ? arena_.data() : buffer_.data(); }
  size_t used() const { return used_; }
  uint64_t arena_bytes() const { return shared_ ? arena_.size() : 0; }
  bool shared() const { return shared_; }

 private:
  bool shared_ = false;
  SharedArena arena_;
  std::vector<char> buffer_;
  size_t used_ = 0;
};

// Reads the next request without the GIL, so threads the dataset started
// keep running while this worker is idle.
bool ReadRequest(int fd, WorkRequest* request) {
  PyThreadState* state = PyEval_SaveThread();
  bool ok = ReadAll(fd, request, sizeof(*request));
  PyEval_RestoreThread(state);
  return ok;
}

void ReplyError(int fd, const std::string& reason, const std::string& message) {
  if (!WriteMessage(fd, ReplyKind::kError, EncodeErrorReply({reason, message}))) _exit(0);
}

void LoadAndReply(int fd, const py::object& getitem, const WorkRequest& request,
                  Staging& staging, SampleReply& reply) {
  staging.Clear();
  reply.fields.clear();
  Structure layout;  // each sample's own; the parent checks it against the first
  py::object item = getitem(request.index);
  FillFields(item, layout, [&](const std::string& name, DType dtype, const Shape& shape) {
    FieldMeta meta;
    meta.name = name;
    meta.dtype = dtype;
    meta.shape = shape;
    meta.bytes = Tensor(dtype, shape, nullptr).bytes();
    meta.offset = staging.Take(meta.bytes);
    reply.fields.push_back(meta);
    return Tensor(dtype, shape, staging.data() + meta.offset);
  });
  reply.layout = static_cast<int>(layout.kind());
  reply.arena_bytes = staging.arena_bytes();
  const std::string body = EncodeSampleReply(reply);
  bool ok = staging.shared()
                ? WriteMessage(fd, ReplyKind::kSample, body)
                : WriteMessage(fd, ReplyKind::kSample, body, staging.data(), staging.used());
  if (!ok) _exit(0);  // the parent is gone
}

}  // namespace

void RunWorkerProcess(const WorkerProcessConfig& config) {
  // Die with the parent: the signal covers a parent killed while this worker
  // is busy; an idle worker also sees end of file on its socket.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != config.parent_pid) _exit(0);  // the parent died before prctl
  // Ctrl-C goes to the whole foreground process group; the parent handles it
  // and closes the workers.
  ::signal(SIGINT, SIG_IGN);
  CloseInheritedFdsExcept({config.socket_fd, config.arena_fd});
  const int fd = config.socket_fd;
  try {
    WorkerInfoScope info(config.worker_id, config.num_workers, config.seed, 0, config.dataset);
    // As torch's workers do: one intra-op thread, so that torch code in
    // __getitem__ neither oversubscribes the cores nor enters an OpenMP pool
    // that the fork left without its threads.
    try {
      py::dict modules = py::module_::import("sys").attr("modules");
      if (modules.contains("torch")) modules["torch"].attr("set_num_threads")(1);
    } catch (py::error_already_set&) {
    }
    if (!config.worker_init_fn->get().is_none()) {
      try {
        config.worker_init_fn->get()(config.worker_id);
      } catch (py::error_already_set& e) {
        ReplyError(fd, "worker_init", std::string("worker_init_fn raised ") + e.what());
        _exit(1);
      }
    }
    if (!WriteMessage(fd, ReplyKind::kReady, std::string())) _exit(0);

    Staging staging(config.arena_fd);
    SampleReply reply;
    const py::object getitem = config.dataset->get().attr("__getitem__");
    WorkRequest request;
    while (ReadRequest(fd, &request)) {
      info.epoch = request.epoch;
      info.seed = request.seed;
      try {
        SeedPythonGenerators(request.seed, request.epoch, request.index);
        LoadAndReply(fd, getitem, request, staging, reply);
      } catch (py::error_already_set& e) {
        if (IsInterrupt(e)) {
          // KeyboardInterrupt, SystemExit, GeneratorExit: never a sample
          // error. The parent raises the same type again (kInterruptReason).
          const std::string type = py::str(e.type().attr("__name__"));
          ReplyError(fd, std::string(kInterruptReason) + type, py::str(e.value()));
        } else {
          ReplyError(fd, "exception", e.what());
        }
      } catch (const SampleError& e) {
        ReplyError(fd, e.reason(), e.message());
      } catch (const std::exception& e) {
        ReplyError(fd, "exception", e.what());
      }
    }
  } catch (...) {
    // Nothing can be reported past a broken socket; the parent sees the exit.
  }
  _exit(0);
}

}  // namespace feedline::python
