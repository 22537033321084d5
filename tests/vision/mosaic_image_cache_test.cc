#include "src/vision/mosaic_image_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace feedline::vision {
namespace {

// A decoder of an image of `bytes` pixel bytes, all `value`, that counts
// its calls in `decodes`.
template <typename Count>
MosaicImageCache::Decoder ImageOf(size_t bytes, uint8_t value, Count* decodes) {
  return [=](MosaicImage& image) {
    ++*decodes;
    image.pixels.assign(bytes, value);
    image.pixels.shrink_to_fit();
  };
}

TEST(MosaicImageCache, DecodesAnImageOnceWhileItIsKept) {
  MosaicImageCache cache(1000);
  int decodes = 0;
  const auto decode = ImageOf(100, 7, &decodes);
  EXPECT_EQ(cache.Get(3, decode)->pixels[0], 7);
  EXPECT_EQ(cache.Get(3, decode)->pixels[0], 7);
  EXPECT_EQ(decodes, 1);
  EXPECT_EQ(cache.bytes(), 100);
}

TEST(MosaicImageCache, DropsTheLeastRecentlyUsedToStayWithinCapacity) {
  MosaicImageCache cache(300);
  int decodes = 0;
  auto get = [&](int64_t index) {
    return cache.Get(index, ImageOf(100, static_cast<uint8_t>(index), &decodes));
  };
  get(1);
  get(2);
  get(3);
  get(1);  // 1 is now the most recent: 2 goes first
  get(4);
  EXPECT_EQ(cache.bytes(), 300);
  decodes = 0;
  get(1);
  get(3);
  get(4);
  EXPECT_EQ(decodes, 0);
  get(2);
  EXPECT_EQ(decodes, 1);
}

TEST(MosaicImageCache, KeepsNothingWithoutCapacityOrForAnImageTooLarge) {
  MosaicImageCache none(0), small(50);
  int decodes = 0;
  const auto decode = ImageOf(100, 1, &decodes);
  none.Get(1, decode);
  none.Get(1, decode);
  small.Get(1, decode);
  small.Get(1, decode);
  EXPECT_EQ(decodes, 4);
  EXPECT_EQ(none.bytes(), 0);
  EXPECT_EQ(small.bytes(), 0);
}

TEST(MosaicImageCache, AFailedDecodeKeepsNothingAndReachesTheCaller) {
  MosaicImageCache cache(1000);
  EXPECT_THROW(cache.Get(5, [](MosaicImage&) { throw std::runtime_error("broken.jpg"); }),
               std::runtime_error);
  int decodes = 0;
  EXPECT_EQ(cache.Get(5, ImageOf(10, 2, &decodes))->pixels[0], 2);
  EXPECT_EQ(decodes, 1);
}

TEST(MosaicImageCache, AThreadWantingAnImageBeingDecodedWaitsForIt) {
  MosaicImageCache cache(1000);
  std::atomic<int> decodes{0};
  std::atomic<bool> started{false};
  auto slow = [&](MosaicImage& image) {
    ++decodes;
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    image.pixels.assign(10, 9);
  };
  std::thread first([&] { cache.Get(8, slow); });
  while (!started) std::this_thread::yield();
  EXPECT_EQ(cache.Get(8, slow)->pixels[0], 9);
  first.join();
  EXPECT_EQ(decodes.load(), 1);
}

TEST(MosaicImageCache, ADroppedImagesBufferGoesToTheNextDecode) {
  MosaicImageCache cache(100);
  int decodes = 0;
  cache.Get(1, ImageOf(100, 1, &decodes));
  std::shared_ptr<const MosaicImage> held = cache.Get(2, ImageOf(100, 2, &decodes));
  // 1 was dropped for 2 and no one holds it: its buffer comes to 3's decode.
  size_t given = 0;
  cache.Get(3, [&](MosaicImage& image) {
    given = image.pixels.capacity();
    image.pixels.assign(100, 3);
  });
  EXPECT_EQ(given, 100u);
  // 2 was dropped for 3 while held: its pixels stay with their holder.
  EXPECT_EQ(held->pixels, std::vector<uint8_t>(100, 2));
  cache.Get(4, [&](MosaicImage& image) {
    given = image.pixels.capacity();
    image.pixels.assign(100, 4);
  });
  EXPECT_EQ(given, 0u);
}

}  // namespace
}  // namespace feedline::vision
