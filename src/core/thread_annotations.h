// Clang's thread-safety attributes, so that the compiler checks which mutex
// guards which state (-Wthread-safety; `make test-thread-safety` builds the
// library with clang and makes its warnings errors). Other compilers see
// nothing: the macros expand to nothing.
#ifndef FEEDLINE_SRC_CORE_THREAD_ANNOTATIONS_H_
#define FEEDLINE_SRC_CORE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define FEEDLINE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FEEDLINE_THREAD_ANNOTATION(x)
#endif

// A type whose objects are capabilities (mutexes).
#define CAPABILITY(x) FEEDLINE_THREAD_ANNOTATION(capability(x))
// An RAII type that holds a capability for its lifetime.
#define SCOPED_CAPABILITY FEEDLINE_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the capability held.
#define GUARDED_BY(x) FEEDLINE_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is accessed only with the capability held.
#define PT_GUARDED_BY(x) FEEDLINE_THREAD_ANNOTATION(pt_guarded_by(x))
// The caller must hold the capability.
#define REQUIRES(...) FEEDLINE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The caller must not hold the capability (the function takes it).
#define EXCLUDES(...) FEEDLINE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function acquires / releases the capability.
#define ACQUIRE(...) FEEDLINE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FEEDLINE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// The function asserts (tells the analysis) that the capability is held.
#define ASSERT_CAPABILITY(x) FEEDLINE_THREAD_ANNOTATION(assert_capability(x))
// The function returns a reference to the capability.
#define RETURN_CAPABILITY(x) FEEDLINE_THREAD_ANNOTATION(lock_returned(x))
// Opts a function out of the analysis; say why wherever it is used.
#define NO_THREAD_SAFETY_ANALYSIS FEEDLINE_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // FEEDLINE_SRC_CORE_THREAD_ANNOTATIONS_H_
