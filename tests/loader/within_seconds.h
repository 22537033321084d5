// WithinSeconds: runs a test's body on a thread and fails the test if the
// body has not returned within the given seconds (a deadlock), instead of
// hanging the suite. The stuck thread cannot be joined, so the process
// ends there, with a message on stderr.
#ifndef FEEDLINE_TESTS_LOADER_WITHIN_SECONDS_H_
#define FEEDLINE_TESTS_LOADER_WITHIN_SECONDS_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <utility>

namespace feedline::testing {

inline void WithinSeconds(int seconds, std::function<void()> body) {
  std::packaged_task<void()> task(std::move(body));
  std::future<void> done = task.get_future();
  std::thread thread(std::move(task));
  if (done.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "the test's body did not return within %d s: deadlocked\n", seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  thread.join();
  done.get();
}

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_LOADER_WITHIN_SECONDS_H_
