// Mutex, MutexLock, MutexUnlock and CondVar: std::mutex and
// std::condition_variable with clang's thread-safety annotations, so that
// state marked GUARDED_BY(mu) is only touched with `mu` held and functions
// marked REQUIRES(mu) are only called with it held (see
// thread_annotations.h). The wrappers add no work to the std types.
#ifndef FEEDLINE_SRC_CORE_MUTEX_H_
#define FEEDLINE_SRC_CORE_MUTEX_H_

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "src/core/thread_annotations.h"

namespace feedline::internal {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() {
    mu_.lock();
    SetOwner();
  }
  void Unlock() RELEASE() {
    ClearOwner();
    mu_.unlock();
  }
  // Tells the analysis that this mutex is held where it is reached by
  // another name (the scheduler's mutex is shared by the components of the
  // engine, each of which names it through its own member). Debug builds
  // (the sanitizer builds among them) check that the calling thread holds it.
  void AssertHeld() const ASSERT_CAPABILITY(this) {
#ifndef NDEBUG
    assert(owner_.load(std::memory_order_relaxed) == std::this_thread::get_id());
#endif
  }

 private:
  friend class CondVar;
#ifndef NDEBUG
  void SetOwner() { owner_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  void ClearOwner() { owner_.store(std::thread::id(), std::memory_order_relaxed); }
  std::atomic<std::thread::id> owner_{};
#else
  void SetOwner() {}
  void ClearOwner() {}
#endif
  std::mutex mu_;
};

// Holds `mu` for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Releases a held `mu` for its scope and takes it again on leaving it
// (also when an exception leaves it): work done without the lock inside a
// function that holds it.
class SCOPED_CAPABILITY MutexUnlock {
 public:
  explicit MutexUnlock(Mutex* mu) RELEASE(mu) : mu_(mu) { mu_->Unlock(); }
  // RELEASE() on a scoped capability's destructor means "undo what the
  // constructor did": clang sees `mu` held again after the scope.
  ~MutexUnlock() RELEASE() { mu_->Lock(); }
  MutexUnlock(const MutexUnlock&) = delete;
  MutexUnlock& operator=(const MutexUnlock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable waited on with a Mutex held. There is no predicate
// overload: callers loop on their condition in their own (analysed) code.
class CondVar {
 public:
  // Releases `mu` while waiting; holds it again on return, as
  // std::condition_variable::wait does. May wake spuriously.
  void Wait(Mutex* mu) REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.lock);
  }
  // As Wait, until `deadline` at the latest; false if it passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_until(lock.lock, deadline) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  // A std::unique_lock over the held mutex that leaves it held when it goes,
  // also when the wait unwinds (thread cancellation): the caller's
  // MutexLock releases it.
  struct Adopted {
    explicit Adopted(Mutex* mu) : owner(mu), lock(mu->mu_, std::adopt_lock) { owner->ClearOwner(); }
    ~Adopted() {
      lock.release();
      owner->SetOwner();  // held again by this thread
    }
    Mutex* owner;
    std::unique_lock<std::mutex> lock;
  };
  std::condition_variable cv_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_MUTEX_H_
