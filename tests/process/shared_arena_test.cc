// SharedArena, the memory through which a worker process hands a sample's
// arrays to the loader: one file, two mappings that see the same bytes,
// grown by one side and mapped further by the other.
#include "src/process/shared_arena.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

TEST(SharedArena, CreatesAMappedFileOfAtLeastTheSize) {
  SharedArena arena = SharedArena::Create("feedline-test", 4096);
  ASSERT_GE(arena.fd(), 0);
  ASSERT_NE(arena.data(), nullptr);
  EXPECT_GE(arena.size(), 4096u);
  std::memset(arena.data(), 0x5a, 4096);
  EXPECT_EQ(arena.data()[4095], 0x5a);
}

TEST(SharedArena, AnAttachedMappingSeesTheSameBytes) {
  SharedArena owner = SharedArena::Create("feedline-test", 4096);
  SharedArena attached = SharedArena::Attach(owner.fd());
  ASSERT_GE(attached.size(), 4096u);
  std::strcpy(owner.data(), "written by the worker");
  EXPECT_STREQ(attached.data(), "written by the worker");
}

TEST(SharedArena, GrowsKeepingItsBytesAndTheOtherSideMapsFurther) {
  SharedArena owner = SharedArena::Create("feedline-test", 4096);
  SharedArena attached = SharedArena::Attach(owner.fd());
  std::strcpy(owner.data(), "kept");
  std::string error;
  ASSERT_TRUE(owner.Reserve(1 << 20, &error)) << error;
  EXPECT_GE(owner.size(), size_t{1} << 20);
  EXPECT_STREQ(owner.data(), "kept");
  owner.data()[(1 << 20) - 1] = 'z';
  attached.MapAtLeast(1 << 20);
  EXPECT_GE(attached.size(), size_t{1} << 20);
  EXPECT_EQ(attached.data()[(1 << 20) - 1], 'z');
  EXPECT_STREQ(attached.data(), "kept");
}

TEST(SharedArena, MappingMoreThanTheFileHoldsIsAnError) {
  SharedArena owner = SharedArena::Create("feedline-test", 4096);
  SharedArena attached = SharedArena::Attach(owner.fd());
  EXPECT_THROW(attached.MapAtLeast(size_t{1} << 30), Error);
}

TEST(SharedArena, MovesItsMapping) {
  SharedArena a = SharedArena::Create("feedline-test", 4096);
  char* data = a.data();
  SharedArena b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  SharedArena c;
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
}

}  // namespace
}  // namespace feedline::internal
