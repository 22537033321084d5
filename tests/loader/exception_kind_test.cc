// SortCurrentException and RethrowIfCancellation (src/loader/exception_kind.h):
// the kind of each exception the loader's handlers meet, the object itself
// handed back, and a thread cancellation let through.
#include "src/loader/exception_kind.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

// What Python's KeyboardInterrupt is to the engine: not a std::exception.
struct Interrupt {};

// Sorts what `fail` throws, in the handler that caught it; `check` runs
// there too, while the exception object lives.
void SortThrown(const std::function<void()>& fail,
                const std::function<void(const CaughtException&)>& check) {
  try {
    fail();
    ADD_FAILURE() << "nothing was thrown";
  } catch (...) {
    check(SortCurrentException());
  }
}

TEST(SortCurrentException, OutOfMemory) {
  SortThrown([] { throw std::bad_alloc(); }, [](const CaughtException& caught) {
    EXPECT_EQ(caught.kind, ExceptionKind::kOutOfMemory);
    EXPECT_NE(dynamic_cast<const std::bad_alloc*>(caught.exception), nullptr);
  });
}

TEST(SortCurrentException, ASampleErrorAndATimeoutErrorKeepTheirFields) {
  SortThrown([] { throw SampleError(FailureKind::kDecode, "a.jpg", "corrupt", 7); },
             [](const CaughtException& caught) {
               ASSERT_EQ(caught.kind, ExceptionKind::kSampleError);
               EXPECT_EQ(caught.sample_error().reason(), "decode");
               EXPECT_EQ(caught.sample_error().source(), "a.jpg");
               EXPECT_EQ(caught.sample_error().index(), 7);
             });
  SortThrown([] { throw TimeoutError(3, "b.jpg", 0.5); }, [](const CaughtException& caught) {
    ASSERT_EQ(caught.kind, ExceptionKind::kSampleError);
    EXPECT_EQ(caught.sample_error().reason(), "timeout");
  });
}

TEST(SortCurrentException, AnyOtherStdException) {
  SortThrown([] { throw std::runtime_error("no such file"); }, [](const CaughtException& caught) {
    ASSERT_EQ(caught.kind, ExceptionKind::kException);
    EXPECT_EQ(std::string(caught.exception->what()), "no such file");
  });
  // An Error that is no SampleError is an ordinary exception.
  SortThrown([] { throw Error("misuse"); }, [](const CaughtException& caught) {
    EXPECT_EQ(caught.kind, ExceptionKind::kException);
  });
}

TEST(SortCurrentException, WhatIsNoStdExceptionIsAnInterrupt) {
  SortThrown([] { throw Interrupt(); }, [](const CaughtException& caught) {
    EXPECT_EQ(caught.kind, ExceptionKind::kInterrupt);
    EXPECT_EQ(caught.exception, nullptr);
  });
}

TEST(SortCurrentException, TheCallersHandlerStillHoldsTheException) {
  try {
    try {
      throw std::runtime_error("kept");
    } catch (...) {
      SortCurrentException();
      throw;  // what the caller's handler rethrows is the same exception
    }
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "kept");
  }
}

#if !defined(__SANITIZE_THREAD__)
// A cancelled thread must unwind through every handler: glibc aborts the
// process if one ends the cancellation's unwinding instead of rethrowing it.
TEST(RethrowIfCancellation, LetsAThreadCancellationThrough) {
  static std::atomic<bool> started{false};
  static std::atomic<bool> handled_as_failure{false};
  started = false;
  handled_as_failure = false;
  pthread_t thread;
  auto body = [](void*) -> void* {
    try {
      started = true;
      while (true) pthread_testcancel();
    } catch (...) {
      RethrowIfCancellation();
      handled_as_failure = true;
    }
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, nullptr, body, nullptr), 0);
  while (!started) {
  }
  ASSERT_EQ(pthread_cancel(thread), 0);
  void* result = nullptr;
  ASSERT_EQ(pthread_join(thread, &result), 0);
  EXPECT_EQ(result, PTHREAD_CANCELED);
  EXPECT_FALSE(handled_as_failure);
}
#endif

}  // namespace
}  // namespace feedline::internal
