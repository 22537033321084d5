#include "feedline/vision/mosaic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;

MosaicOptions OptionsOfSize(int size) {
  MosaicOptions options;
  options.size = size;
  return options;
}

// A draw made by hand: a mosaic meeting at (xc, yc), the canvas scaled by
// `scale` with its centre at (tx, ty).
MosaicDraw HandDraw(int xc, int yc, double scale, double tx, double ty, int tiles = 4) {
  MosaicDraw draw;
  draw.tiles = tiles;
  draw.xc = xc;
  draw.yc = yc;
  draw.scale = scale;
  draw.tx = tx;
  draw.ty = ty;
  return draw;
}

TEST(DrawMosaic, IsAFunctionOfSeedEpochAndIndex) {
  const MosaicOptions options = OptionsOfSize(640);
  auto draw = [&](uint64_t seed, uint64_t epoch, int64_t index) {
    Rng rng(seed, epoch, index);
    return DrawMosaic(options, index, {}, 1000, rng);
  };
  const MosaicDraw a = draw(7, 2, 42), b = draw(7, 2, 42);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.xc, b.xc);
  EXPECT_EQ(a.yc, b.yc);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.tx, b.tx);
  EXPECT_EQ(a.ty, b.ty);
  EXPECT_EQ(a.images[0], 42);
  // Another epoch, seed or index draws other partners (3 of 1000 each).
  EXPECT_NE(draw(7, 3, 42).images, a.images);
  EXPECT_NE(draw(8, 2, 42).images, a.images);
  EXPECT_NE(draw(7, 2, 43).xc, a.xc);
}

TEST(DrawMosaic, DrawsPartnersFromTheBatch) {
  const MosaicOptions options = OptionsOfSize(64);
  const std::vector<int64_t> batch = {7, 300, 12, 950};
  std::set<int64_t> seen;
  for (int64_t index : batch) {
    Rng rng(5, 1, index);
    const MosaicDraw d = DrawMosaic(options, index, batch, 1000, rng);
    EXPECT_EQ(d.images[0], index);
    for (int k = 1; k < 4; ++k) {
      EXPECT_NE(std::find(batch.begin(), batch.end(), d.images[k]), batch.end()) << d.images[k];
      seen.insert(d.images[k]);
    }
  }
  // 12 draws from 4: the batch's images show up as partners.
  EXPECT_GE(seen.size(), 3u);
  // The draws after the partners are the same however they were drawn
  // (one UniformInt each), so the batch changes partners only.
  Rng a(5, 1, 7), b(5, 1, 7);
  const MosaicDraw in_batch = DrawMosaic(options, 7, batch, 1000, a);
  const MosaicDraw alone = DrawMosaic(options, 7, {}, 1000, b);
  EXPECT_EQ(in_batch.xc, alone.xc);
  EXPECT_EQ(in_batch.scale, alone.scale);
  // A batch of one draws from the dataset, as a sample alone does.
  Rng c(5, 1, 7);
  const std::vector<int64_t> one = {7};
  EXPECT_EQ(DrawMosaic(options, 7, one, 1000, c).images, alone.images);
}

TEST(DrawMosaic, DrawsWithinUltralyticsRanges) {
  const MosaicOptions options = OptionsOfSize(640);
  std::array<int, 10> partner_bins{};
  double min_scale = 2, max_scale = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    Rng rng(1, 0, i);
    const MosaicDraw d = DrawMosaic(options, i, {}, 10, rng);
    ASSERT_EQ(d.tiles, 4);
    for (int k = 1; k < 4; ++k) {
      ASSERT_GE(d.images[k], 0);
      ASSERT_LT(d.images[k], 10);
      ++partner_bins[d.images[k]];
    }
    ASSERT_GE(d.xc, 320);
    ASSERT_LT(d.xc, 960);
    ASSERT_GE(d.yc, 320);
    ASSERT_LT(d.yc, 960);
    ASSERT_GE(d.scale, 0.5);
    ASSERT_LT(d.scale, 1.5);
    ASSERT_GE(d.tx, 0.4 * 640);
    ASSERT_LT(d.tx, 0.6 * 640);
    ASSERT_GE(d.ty, 0.4 * 640);
    ASSERT_LT(d.ty, 0.6 * 640);
    min_scale = std::min(min_scale, d.scale);
    max_scale = std::max(max_scale, d.scale);
  }
  for (int count : partner_bins) EXPECT_NEAR(count, 600, 120);  // uniform
  EXPECT_LT(min_scale, 0.55);
  EXPECT_GT(max_scale, 1.45);
}

TEST(DrawMosaic, PChoosesTheImageAlone) {
  MosaicOptions options = OptionsOfSize(64);
  options.p = 0;
  Rng rng(1, 0, 5);
  EXPECT_EQ(DrawMosaic(options, 5, {}, 10, rng).tiles, 1);
  options.p = 0.5;
  int mosaics = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    Rng r(1, 0, i);
    mosaics += DrawMosaic(options, i, {}, 10, r).tiles == 4;
  }
  EXPECT_NEAR(mosaics, 500, 80);
}

TEST(DrawMixup, DrawsTheCoinThePartnerFromTheBatchAndABeta32Ratio) {
  MosaicOptions options;
  options.mixup = 0.3;
  const std::vector<int64_t> batch = {40, 41, 42, 43};
  int mixed = 0;
  double sum = 0, squares = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    Rng rng(7, 0, static_cast<uint64_t>(i), kMixupStream);
    const MixupDraw m = DrawMixup(options, batch, 1000, rng);
    mixed += m.mixed;
    EXPECT_THAT(batch, ::testing::Contains(m.partner));
    ASSERT_GT(m.ratio, 0);
    ASSERT_LT(m.ratio, 1);
    sum += m.ratio;
    squares += m.ratio * m.ratio;
  }
  const double mean = sum / kDraws;
  const double variance = squares / kDraws - mean * mean;
  EXPECT_NEAR(static_cast<double>(mixed) / kDraws, 0.3, 0.015);
  // Beta(32, 32): mean 1/2, variance 1 / (4 x 65).
  EXPECT_NEAR(mean, 0.5, 0.003);
  EXPECT_NEAR(variance, 1.0 / 260, 0.0003);
  // A function of the stream: drawn again, the same.
  Rng a(7, 3, 9, kMixupStream), b(7, 3, 9, kMixupStream);
  const MixupDraw x = DrawMixup(options, batch, 1000, a), y = DrawMixup(options, batch, 1000, b);
  EXPECT_EQ(x.partner, y.partner);
  EXPECT_EQ(x.ratio, y.ratio);
}

TEST(DrawMixup, DrawsFromTheDatasetForABatchOfOne) {
  MosaicOptions options;
  options.mixup = 1;
  std::vector<bool> seen(5);
  for (int i = 0; i < 200; ++i) {
    Rng rng(1, 0, static_cast<uint64_t>(i), kMixupStream);
    const MixupDraw m = DrawMixup(options, std::vector<int64_t>{2}, 5, rng);
    ASSERT_TRUE(m.mixed);
    ASSERT_GE(m.partner, 0);
    ASSERT_LT(m.partner, 5);
    seen[m.partner] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 5);
}

TEST(CheckMosaicOptions, NamesTheArgument) {
  auto message = [](MosaicOptions o) {
    try {
      CheckMosaicOptions(o, "YOLO dataset x");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  MosaicOptions o;
  EXPECT_EQ(message(o), "");
  o.size = 0;
  EXPECT_THAT(message(o), HasSubstr("mosaic size must be from 1"));
  o = {};
  o.scale = 1;
  EXPECT_THAT(message(o), HasSubstr("mosaic scale must be in [0, 1)"));
  o = {};
  o.translate = 0.6;
  EXPECT_THAT(message(o), HasSubstr("mosaic translate"));
  o = {};
  o.p = NAN;
  EXPECT_THAT(message(o), HasSubstr("mosaic p must be in [0, 1]"));
  o = {};
  o.cache_bytes = -1;
  EXPECT_THAT(message(o), HasSubstr("mosaic cache_bytes must be >= 0"));
  o = {};
  o.mixup = 1.5;
  EXPECT_THAT(message(o), HasSubstr("mosaic mixup must be in [0, 1], got 1.5"));
  o.mixup = NAN;
  EXPECT_THAT(message(o), HasSubstr("mosaic mixup must be in [0, 1]"));
}

// Image sizes of a few shapes: wide, tall, square, small, large.
const std::array<std::array<int, 2>, 6> kImageSizes = {
    {{480, 640}, {640, 480}, {300, 300}, {33, 71}, {1200, 900}, {640, 640}}};

TEST(PlanMosaicTile, TilesCoverTheOutputWithoutOverlap) {
  const MosaicOptions options = OptionsOfSize(160);
  const int s = options.size;
  for (int64_t i = 0; i < 300; ++i) {
    Rng rng(3, 1, i);
    const MosaicDraw draw = DrawMosaic(options, i, {}, 100, rng);
    std::vector<int> owner(static_cast<size_t>(s) * s, -1);
    for (int k = 0; k < 4; ++k) {
      const auto [h, w] = kImageSizes[(i + k) % kImageSizes.size()];
      const MosaicTile t = PlanMosaicTile(options, draw, k, h, w);
      // The canvas part each tile shows sits in its quadrant.
      const bool right = k == 1 || k == 3, bottom = k >= 2;
      ASSERT_EQ(right ? t.canvas_x0 : t.canvas_x1, draw.xc);
      ASSERT_EQ(bottom ? t.canvas_y0 : t.canvas_y1, draw.yc);
      ASSERT_EQ(std::max(t.resized_width, t.resized_height), s);
      if (t.empty()) continue;
      // The source box lies inside the image.
      const PipelinePlan& p = t.plan;
      ASSERT_GE(p.x, 0);
      ASSERT_GE(p.y, 0);
      ASSERT_LE(p.x + p.width, w + 1e-9);
      ASSERT_LE(p.y + p.height, h + 1e-9);
      ASSERT_EQ(p.out_width, t.ox1 - t.ox0);
      ASSERT_EQ(p.out_height, t.oy1 - t.oy0);
      // It maps to its rectangle, within the DCT scale's snapping (and a
      // whole source pixel where under one shows).
      const double slack_x = t.sx * (p.width <= 1 ? 1 : p.max_scale / 2.0) + 1e-6;
      const double slack_y = t.sy * (p.height <= 1 ? 1 : p.max_scale / 2.0) + 1e-6;
      if (p.x > 0) {
        ASSERT_NEAR(p.x * t.sx + t.dx, t.ox0, slack_x);
      }
      if (p.x + p.width < w) {
        ASSERT_NEAR((p.x + p.width) * t.sx + t.dx, t.ox1, slack_x);
      }
      if (p.y > 0) {
        ASSERT_NEAR(p.y * t.sy + t.dy, t.oy0, slack_y);
      }
      if (p.y + p.height < h) {
        ASSERT_NEAR((p.y + p.height) * t.sy + t.dy, t.oy1, slack_y);
      }
      for (int y = t.oy0; y < t.oy1; ++y) {
        for (int x = t.ox0; x < t.ox1; ++x) {
          int& o = owner[static_cast<size_t>(y) * s + x];
          ASSERT_EQ(o, -1) << "tiles " << o << " and " << k << " overlap at " << x << "," << y;
          o = k;
        }
      }
    }
    // Every output pixel whose centre lands well inside a tile's canvas part
    // belongs to that tile.
    for (int y = 0; y < s; y += 7) {
      for (int x = 0; x < s; x += 7) {
        const double cx = (x + 0.5 - draw.tx) / draw.scale + s;
        const double cy = (y + 0.5 - draw.ty) / draw.scale + s;
        for (int k = 0; k < 4; ++k) {
          const auto [h, w] = kImageSizes[(i + k) % kImageSizes.size()];
          const MosaicTile t = PlanMosaicTile(options, draw, k, h, w);
          const double margin = 1 / draw.scale;
          if (cx > t.canvas_x0 + margin && cx < t.canvas_x1 - margin &&
              cy > t.canvas_y0 + margin && cy < t.canvas_y1 - margin) {
            ASSERT_EQ(owner[static_cast<size_t>(y) * s + x], k) << x << "," << y;
          }
        }
      }
    }
  }
}

TEST(PlanMosaicTile, ResizesAsUltralyticsLoadsImages) {
  const MosaicOptions options = OptionsOfSize(640);
  const MosaicDraw draw = HandDraw(640, 640, 1, 320, 320);
  // ceil(side * 640 / longer side), at most 640.
  MosaicTile t = PlanMosaicTile(options, draw, 0, 375, 500);
  EXPECT_EQ(t.resized_width, 640);
  EXPECT_EQ(t.resized_height, 480);
  t = PlanMosaicTile(options, draw, 0, 333, 1000);
  EXPECT_EQ(t.resized_height, 214);  // 213.12 rounded up
  t = PlanMosaicTile(options, draw, 0, 640, 64);
  EXPECT_EQ(t.resized_width, 64);
}

TEST(PlanMosaicTile, PlacesTheImageAloneLetterboxed) {
  const MosaicOptions options = OptionsOfSize(100);
  // Scale 1 and the canvas centre at the output's: the canvas is the output.
  const MosaicDraw draw = HandDraw(0, 0, 1, 50, 50, /*tiles=*/1);
  const MosaicTile t = PlanMosaicTile(options, draw, 0, 100, 200);
  EXPECT_EQ(t.resized_width, 100);
  EXPECT_EQ(t.resized_height, 50);
  EXPECT_EQ(t.left, 0);
  EXPECT_EQ(t.top, 25);
  EXPECT_THAT((std::array<int, 4>{t.ox0, t.oy0, t.ox1, t.oy1}), ElementsAre(0, 25, 100, 75));
  EXPECT_EQ(t.plan.x, 0);
  EXPECT_EQ(t.plan.y, 0);
  EXPECT_EQ(t.plan.width, 200);
  EXPECT_EQ(t.plan.height, 100);
}

TEST(MapMosaicBox, MovesAndFiltersBoxesAsTheFormulasSay) {
  const MosaicOptions options = OptionsOfSize(100);
  // Output = scale (canvas - 100) + t; an image of 200 x 100 is resized to
  // 100 x 50 (half), tile 3 placed at (xc, yc) = (60, 70).
  MosaicDraw draw = HandDraw(60, 70, 1, 50, 50);
  MosaicTile t = PlanMosaicTile(options, draw, 3, 100, 200);
  EXPECT_EQ(t.left, 60);
  EXPECT_EQ(t.top, 70);
  auto map = [&](std::array<float, 4> box) { return MapMosaicBox(options, draw, t, box); };
  // (20, 20, 100, 60) -> resized (10, 10, 50, 30) -> canvas (70, 80, 110,
  // 100) -> output (20, 30, 60, 50).
  std::optional<std::array<float, 4>> box = map({20, 20, 100, 60});
  ASSERT_TRUE(box);
  EXPECT_THAT(*box, ElementsAre(20, 30, 60, 50));
  // The whole image: clipped by the output at 100, 90% of its area left.
  box = map({0, 0, 200, 100});
  ASSERT_TRUE(box);
  EXPECT_THAT(*box, ElementsAre(10, 20, 100, 70));
  // Clipped to 2 pixels wide: dropped (box_candidates wants over 2).
  EXPECT_FALSE(map({176, 0, 200, 100}));
  // 4 pixels: kept.
  box = map({172, 0, 200, 100});
  ASSERT_TRUE(box);
  EXPECT_THAT(*box, ElementsAre(FloatNear(96, 1e-4), 20, 100, 70));

  // Scale 2 with the centre at (-15, 50): canvas (70, 80, 110, 100) ->
  // (-75, 10, 5, 50), clipped to (0, 10, 5, 50): 6% of its scaled area,
  // dropped; the same box further right keeps enough.
  draw = HandDraw(60, 70, 2, -15, 50);
  t = PlanMosaicTile(options, draw, 3, 100, 200);
  EXPECT_FALSE(map({20, 20, 100, 60}));
  draw.tx = 30;  // (-30, 10, 50, 50) -> (0, 10, 50, 50): 62.5%
  t = PlanMosaicTile(options, draw, 3, 100, 200);
  box = map({20, 20, 100, 60});
  ASSERT_TRUE(box);
  EXPECT_THAT(*box, ElementsAre(0, 10, 50, 50));
}

TEST(MapMosaicBox, ClipsToTheCanvasFirst) {
  const MosaicOptions options = OptionsOfSize(100);
  // Tile 0 ends at (30, 40): the 100 x 50 resized image starts at (-70,
  // -10), cut by the canvas at 0.
  const MosaicDraw draw = HandDraw(30, 40, 0.5, 50, 50);
  const MosaicTile t = PlanMosaicTile(options, draw, 0, 100, 200);
  EXPECT_EQ(t.canvas_x0, 0);
  EXPECT_EQ(t.canvas_y0, 0);
  // The whole image: canvas (-70, -10, 30, 40) -> (0, 0, 30, 40) -> output
  // 0.5 (c - 100) + 50: (0, 0, 15, 20). Against its canvas box (not the
  // image's) it keeps all its area.
  const std::optional<std::array<float, 4>> box = MapMosaicBox(options, draw, t, {0, 0, 200, 100});
  ASSERT_TRUE(box);
  EXPECT_THAT(*box, ElementsAre(0, 0, 15, 20));
  EXPECT_EQ(t.ox1, 15);
  EXPECT_EQ(t.oy1, 20);
}

}  // namespace
}  // namespace feedline::vision
