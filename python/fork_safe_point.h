// When worker processes may be forked from a Python program.
//
// Worker processes are forked on the spawner thread (src/process/
// process_spawner.h) while the program's own threads run on. fork() copies
// every lock as it is at that instant, and a lock that a thread holds while
// it runs C code with the GIL released stays held forever in the child. The
// case that hangs: numpy's random generator holds its lock through
// np.random.rand(2_000_000) with the GIL released; a worker restarted during
// that training step inherits the held lock and blocks when the loader seeds
// numpy.random before its first sample.
//
// So a fork waits for a safe point: a thread that uses a loader is inside a
// loader call with the GIL released (waiting for a batch, starting or
// closing an epoch). In the usual program that thread is the training loop's
// only one, and it holds no such lock there. The count is changed only with
// the GIL held, so while the forking thread holds the GIL, a thread counted
// in cannot leave (it first needs the GIL back). Other threads of the program
// that hold locks across a fork are not covered (torch's loader, which forks
// on the thread that iterates, has the same limit).
#ifndef FEEDLINE_PYTHON_FORK_SAFE_POINT_H_
#define FEEDLINE_PYTHON_FORK_SAFE_POINT_H_

#include <optional>

#include "python/python_support.h"

namespace feedline::python {

// A loader call without the GIL, counted as a safe point for forks.
// REQUIRES: the GIL at construction; it is released for the object's scope
// and taken back before it is counted out.
class LoaderCallWithoutGil {
 public:
  LoaderCallWithoutGil();
  ~LoaderCallWithoutGil() noexcept(false);
  LoaderCallWithoutGil(const LoaderCallWithoutGil&) = delete;
  LoaderCallWithoutGil& operator=(const LoaderCallWithoutGil&) = delete;

 private:
  std::optional<GilRelease> release_;
};

// Returns once a thread is inside a LoaderCallWithoutGil. REQUIRES: the GIL,
// which it releases while it waits and holds again on return.
void WaitForForkSafePoint();

// In a forked child: forgets the parent's count and the state of its lock,
// which another loader's spawner thread may have held at the fork.
void ResetForkSafePointInChild();

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_FORK_SAFE_POINT_H_
