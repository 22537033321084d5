// Error types of feedline.
//
// Misuse (bad options, a missing directory, a wrong field type) throws
// feedline::Error with a message that says what to change. A sample that
// fails to load is data, not misuse: it travels as a SampleError carrying the
// dataset index, the source (usually a file name) and the reason, and the
// loader's ErrorPolicy decides what happens to it.
//
// Thread safety: the types are immutable after construction and may be shared.
#ifndef FEEDLINE_ERROR_H_
#define FEEDLINE_ERROR_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "feedline/export.h"
#include "feedline/failure_kind.h"

namespace feedline {

// Thrown for misuse and unrecoverable setup errors.
class FEEDLINE_EXPORT Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// The operating system refused a file operation while a dataset, loader or
// writer was set up: a folder or file that does not exist, cannot be opened,
// read or written. `error_number` is errno's value, `path` the file; the
// message names both. The Python binding raises it as OSError with the
// same errno and filename, which Python makes a FileNotFoundError,
// PermissionError, IsADirectoryError, ... A file that fails while samples
// load is a SampleError (reason "io") instead, for the error policy.
class FEEDLINE_EXPORT OsError : public Error {
 public:
  OsError(int error_number, std::string path, const std::string& what)
      : Error(what), error_number_(error_number), path_(std::move(path)) {}

  int error_number() const { return error_number_; }
  const std::string& path() const { return path_; }

 private:
  int error_number_;
  std::string path_;
};

// Thrown for an argument out of range (an index past the end, a rank beyond
// num_replicas). The Python binding maps it to IndexError.
class FEEDLINE_EXPORT IndexError : public Error {
 public:
  explicit IndexError(const std::string& what) : Error(what) {}
};

// Facts about a failure beyond its kind and message, carried as data so that
// a front end never parses them back out of the text.
struct FailureOrigin {
  // kException and kCollate from Python code: the exception's type, qualified
  // by its module unless a builtin ("KeyError", "mypkg.errors.BadRecord").
  std::string exception_type;
  // kWorkerDied: the worker process, and the signal that ended it (0 if it
  // exited, or is not known).
  int64_t worker_pid = -1;
  int signal = 0;
};

// Thrown by a dataset when a sample cannot be produced (corrupt file, decoder
// error). `kind` says why (failure_kind.h); the loader counts errors by it
// and `reason()` is its name ("decode", "io", "timeout", "exception", ...).
class FEEDLINE_EXPORT SampleError : public Error {
 public:
  SampleError(FailureKind kind, std::string source, std::string message, int64_t index = -1,
              FailureOrigin origin = {});

  FailureKind kind() const { return kind_; }
  // FailureKindName(kind()).
  std::string reason() const { return FailureKindName(kind_); }
  const std::string& source() const { return source_; }
  const std::string& message() const { return message_; }
  int64_t index() const { return index_; }
  const FailureOrigin& origin() const { return origin_; }

  // A copy of this error with the dataset index filled in.
  SampleError WithIndex(int64_t index) const;

 private:
  FailureKind kind_;
  std::string source_;
  std::string message_;
  int64_t index_;
  FailureOrigin origin_;
};

// LoaderOptions::worker_init (Python's worker_init_fn) failed in a worker,
// or a worker process could not start: iteration ends with this error, which
// names the worker and the cause. The Python binding maps it to
// feedline.WorkerInitError, a RuntimeError.
class FEEDLINE_EXPORT WorkerInitError : public Error {
 public:
  WorkerInitError(int worker, const std::string& cause)
      : Error("worker_init failed in worker " + std::to_string(worker) + ": " + cause),
        worker_(worker) {}

  int worker() const { return worker_; }

 private:
  int worker_;
};

// A sample that took longer than LoaderOptions::timeout (FailureKind::kTimeout).
// The error policy handles it like any failed sample; under raise the loader
// throws it (once, when the consumer reaches its batch).
class FEEDLINE_EXPORT TimeoutError : public SampleError {
 public:
  TimeoutError(int64_t index, std::string source, double seconds);
  // The same error as `error`, whose kind is kTimeout, as a TimeoutError.
  explicit TimeoutError(const SampleError& error) : SampleError(error) {}
};

}  // namespace feedline

#endif  // FEEDLINE_ERROR_H_
