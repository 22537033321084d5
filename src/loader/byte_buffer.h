// Growable batch storage that is not zeroed when it grows.
//
// A slot's fields hold whole batches (64 float images are 38 MB); std::vector
// would write zeros over all of it before the first batch, under the engine
// lock, and then the workers write every byte again. Nothing reads batch
// storage before it is written: workers fill the rows, collate the rest, and
// rows that are not delivered are compacted away.
#ifndef FEEDLINE_SRC_LOADER_BYTE_BUFFER_H_
#define FEEDLINE_SRC_LOADER_BYTE_BUFFER_H_

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace feedline::internal {

// An allocator whose value construction (resize) leaves the bytes as they
// are: default-initialization instead of value-initialization. Blocks are
// 64-byte aligned (a cache line), so vector code writing batch rows can use
// aligned and streaming stores. It defines every member std::vector uses
// itself rather than inheriting std::allocator's, so no unaligned path
// (such as C++23's allocate_at_least) can pair with the aligned delete.
template <typename T>
struct DefaultInitAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlignment); }

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const DefaultInitAllocator<U>&) const noexcept {
    return true;
  }
};

using ByteBuffer = std::vector<std::byte, DefaultInitAllocator<std::byte>>;

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_BYTE_BUFFER_H_
