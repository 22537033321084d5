#include "python/fork_safe_point.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>

namespace feedline::python {
namespace {

std::mutex safe_point_mu;
std::condition_variable safe_point_cv;
int threads_in_loader_calls = 0;  // GUARDED_BY(safe_point_mu); changed with the GIL held

}  // namespace

LoaderCallWithoutGil::LoaderCallWithoutGil() {
  {
    std::lock_guard<std::mutex> lock(safe_point_mu);
    ++threads_in_loader_calls;
  }
  safe_point_cv.notify_all();
  release_.emplace();
}

LoaderCallWithoutGil::~LoaderCallWithoutGil() noexcept(false) {
  release_.reset();  // the GIL back first: see the header
  std::lock_guard<std::mutex> lock(safe_point_mu);
  --threads_in_loader_calls;
}

void WaitForForkSafePoint() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(safe_point_mu);
      if (threads_in_loader_calls > 0) return;
    }
    // Without the GIL while waiting: the thread that would come to the safe
    // point may need it first. Woken when one enters; the slice bounds a
    // missed wake-up.
    GilRelease nogil;
    std::unique_lock<std::mutex> lock(safe_point_mu);
    safe_point_cv.wait_for(lock, std::chrono::milliseconds(50),
                           [] { return threads_in_loader_calls > 0; });
  }
}

void ResetForkSafePointInChild() {
  new (&safe_point_mu) std::mutex;
  new (&safe_point_cv) std::condition_variable;
  threads_in_loader_calls = 0;
}

}  // namespace feedline::python
