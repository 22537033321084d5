// FEEDLINE_EXPORT: marks the public API that libfeedline exports.
//
// The library is compiled with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so a symbol is in the shared library's dynamic
// symbol table only if its declaration carries this macro: the classes and
// functions of include/feedline/. Everything else (the engine, slots,
// decoders' internals) stays private to the library, and can change without
// breaking programs built against it. `make test-install` checks that no
// symbol of namespace `internal` is exported.
//
// Put it after `class`/`struct` (exports the members, the vtable and the type
// information, which exceptions and dynamic_cast across the library boundary
// need) or before a free function's declaration.
#ifndef FEEDLINE_EXPORT_H_
#define FEEDLINE_EXPORT_H_

// FEEDLINE_NO_EXPORT keeps one member of an exported class out of the
// library's symbols (a constructor only the library itself calls).
#if defined(__GNUC__) || defined(__clang__)
#define FEEDLINE_EXPORT __attribute__((visibility("default")))
#define FEEDLINE_NO_EXPORT __attribute__((visibility("hidden")))
#else
#define FEEDLINE_EXPORT
#define FEEDLINE_NO_EXPORT
#endif

#endif  // FEEDLINE_EXPORT_H_
