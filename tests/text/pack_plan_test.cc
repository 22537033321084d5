#include "feedline/text/pack_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/rng.h"

namespace feedline::text {
namespace {

std::vector<int64_t> Iota(size_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Long-tailed lengths (log-normal, as web text): most documents short, a
// few several times seq_len.
std::vector<int64_t> LongTailedLengths(size_t n, uint64_t seed) {
  Rng rng(seed, 0, 0);
  std::vector<int64_t> lengths(n);
  for (auto& l : lengths) {
    const double u1 = rng.Uniform() + 1e-12, u2 = rng.Uniform();
    const double normal = std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    l = static_cast<int64_t>(std::exp(5.8 + 1.1 * normal)) + 1;
  }
  return lengths;
}

// Each document's tokens are covered by its pieces exactly once, in order
// of offset, and no row breaks the row limits.
void ExpectExactCover(const PackPlan& plan, const std::vector<int64_t>& lengths,
                      const PackOptions& options) {
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> pieces;  // doc -> (offset, len)
  int64_t tokens = 0;
  for (int64_t r = 0; r < plan.num_rows(); ++r) {
    int64_t used = 0;
    ASSERT_GT(plan.row(r).size(), 0u) << "row " << r;
    ASSERT_LE(static_cast<int64_t>(plan.row(r).size()), options.segment_cap()) << "row " << r;
    for (const PackPiece& p : plan.row(r)) {
      ASSERT_GT(p.length, 0);
      used += p.length;
      pieces[p.document].push_back({p.offset, p.length});
    }
    ASSERT_LE(used, options.seq_len) << "row " << r;
    tokens += used;
  }
  EXPECT_EQ(tokens, plan.tokens);
  int64_t expected = 0;
  for (size_t d = 0; d < lengths.size(); ++d) {
    if (lengths[d] == 0) {
      EXPECT_EQ(pieces.count(static_cast<int64_t>(d)), 0u);
      continue;
    }
    auto& mine = pieces[static_cast<int64_t>(d)];
    std::sort(mine.begin(), mine.end());
    int64_t next = 0;
    for (auto [offset, length] : mine) {
      ASSERT_EQ(offset, next) << "document " << d;
      next += length;
    }
    EXPECT_EQ(next, lengths[d]) << "document " << d;
    expected += lengths[d];
  }
  EXPECT_EQ(tokens, expected);
}

TEST(PackPlanTest, EveryStrategyCoversEveryTokenOnce) {
  const std::vector<int64_t> lengths = LongTailedLengths(3000, 7);
  for (PackStrategy strategy :
       {PackStrategy::kBestFit, PackStrategy::kFirstFit, PackStrategy::kConcatSplit}) {
    for (int64_t max_segments : {0, 1, 3}) {
      PackOptions options;
      options.seq_len = 512;
      options.strategy = strategy;
      options.max_segments = max_segments;
      SCOPED_TRACE(std::string(PackStrategyName(strategy)) + " max_segments " +
                   std::to_string(max_segments));
      const PackPlan plan = PlanPacking(Iota(lengths.size()), lengths, options);
      ExpectExactCover(plan, lengths, options);
      EXPECT_EQ(plan.dropped_documents, 0);
    }
  }
}

TEST(PackPlanTest, BestFitPadsLessThanFirstFit) {
  const std::vector<int64_t> lengths = LongTailedLengths(20000, 3);
  PackOptions options;
  options.seq_len = 2048;
  options.strategy = PackStrategy::kFirstFit;
  const double first = PlanPacking(Iota(lengths.size()), lengths, options).PaddingFraction(2048);
  options.strategy = PackStrategy::kBestFit;
  const double best = PlanPacking(Iota(lengths.size()), lengths, options).PaddingFraction(2048);
  options.strategy = PackStrategy::kConcatSplit;
  const PackPlan concat = PlanPacking(Iota(lengths.size()), lengths, options);
  EXPECT_LT(best, first);
  // Only the last row has padding.
  EXPECT_LT(concat.PaddingFraction(2048), 1.0 / static_cast<double>(concat.num_rows()));
}

TEST(PackPlanTest, ConcatSplitCutsEverySeqLen) {
  const PackPlan plan = PlanPacking(Iota(3), std::vector<int64_t>{5, 3, 4}, [] {
    PackOptions o;
    o.seq_len = 4;
    o.strategy = PackStrategy::kConcatSplit;
    return o;
  }());
  ASSERT_EQ(plan.num_rows(), 3);
  // Row 0: doc 0 [0, 4); row 1: doc 0 [4, 5), doc 1 [0, 3); row 2: doc 2.
  EXPECT_EQ(plan.row(0).size(), 1u);
  EXPECT_EQ(plan.row(1)[0].document, 0);
  EXPECT_EQ(plan.row(1)[0].offset, 4);
  EXPECT_EQ(plan.row(1)[1].document, 1);
  EXPECT_EQ(plan.row(2)[0].document, 2);
  EXPECT_DOUBLE_EQ(plan.PaddingFraction(4), 0.0);
}

TEST(PackPlanTest, BestFitTakesTheTightestRow) {
  PackOptions options;
  options.seq_len = 10;
  options.strategy = PackStrategy::kBestFit;
  // Rows open with 5 (room 5) and 7 (room 3); the 3 goes to the tighter
  // one, which closes full first.
  const PackPlan plan = PlanPacking(Iota(3), std::vector<int64_t>{5, 7, 3}, options);
  ASSERT_EQ(plan.num_rows(), 2);
  ASSERT_EQ(plan.row(0).size(), 2u);
  EXPECT_EQ(plan.row(0)[0].document, 1);
  EXPECT_EQ(plan.row(0)[1].document, 2);
  EXPECT_EQ(plan.row(1)[0].document, 0);
}

TEST(PackPlanTest, FirstFitTakesTheOldestRowWithRoom) {
  PackOptions options;
  options.seq_len = 10;
  options.strategy = PackStrategy::kFirstFit;
  // 5 (room 5), 8 (room 2), then 2 goes to the oldest with room: row of 5.
  const PackPlan plan = PlanPacking(Iota(3), std::vector<int64_t>{5, 8, 2}, options);
  ASSERT_EQ(plan.num_rows(), 2);
  EXPECT_EQ(plan.row(0)[0].document, 0);
  EXPECT_EQ(plan.row(0)[1].document, 2);
  EXPECT_EQ(plan.row(1)[0].document, 1);
}

TEST(PackPlanTest, LongDocumentsSplitTruncateOrDrop) {
  const std::vector<int64_t> lengths = {25, 3};
  PackOptions options;
  options.seq_len = 10;
  PackPlan split = PlanPacking(Iota(2), lengths, options);
  ExpectExactCover(split, lengths, options);
  EXPECT_EQ(split.num_rows(), 3);  // 10, 10, 5+3

  options.long_documents = LongDocuments::kTruncate;
  PackPlan truncated = PlanPacking(Iota(2), lengths, options);
  EXPECT_EQ(truncated.tokens, 13);
  EXPECT_EQ(truncated.dropped_tokens, 15);
  EXPECT_EQ(truncated.dropped_documents, 0);

  options.long_documents = LongDocuments::kDrop;
  PackPlan dropped = PlanPacking(Iota(2), lengths, options);
  EXPECT_EQ(dropped.tokens, 3);
  EXPECT_EQ(dropped.dropped_documents, 1);
  EXPECT_EQ(dropped.dropped_tokens, 25);
}

TEST(PackPlanTest, OpenRowsBoundsTheWindow) {
  PackOptions options;
  options.seq_len = 10;
  options.open_rows = 1;
  // One open row: 6 opens it, 7 does not fit and closes it, 3 then fills the 7's.
  const PackPlan plan = PlanPacking(Iota(3), std::vector<int64_t>{6, 7, 3}, options);
  ASSERT_EQ(plan.num_rows(), 2);
  EXPECT_EQ(plan.row(0).size(), 1u);
  EXPECT_EQ(plan.row(1).size(), 2u);
}

TEST(PackPlanTest, BadInputIsRefusedByName) {
  PackOptions options;
  options.seq_len = 0;
  EXPECT_THROW(PlanPacking(Iota(1), std::vector<int64_t>{1}, options), Error);
  options.seq_len = 8;
  EXPECT_THROW(PlanPacking(std::vector<int64_t>{3}, std::vector<int64_t>{1}, options), IndexError);
  EXPECT_THROW(PlanPacking(Iota(1), std::vector<int64_t>{-1}, options), Error);
  try {
    ParsePackStrategy("bestfit");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"bestfit\""), std::string::npos);
  }
  EXPECT_EQ(ParseLongDocuments("drop"), LongDocuments::kDrop);
}

// Options past what a row can hold fail by name when checked, not as a
// crash or an allocation failure at the first batch.
TEST(PackPlanTest, OptionsHaveUpperBounds) {
  auto message = [](PackOptions options) {
    try {
      options.Check();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  PackOptions options;
  options.seq_len = PackOptions::kMaxSeqLen;
  EXPECT_EQ(message(options), "accepted");
  options.seq_len = int64_t{1} << 62;
  EXPECT_NE(message(options).find("seq_len must be between 1 and 67108864"), std::string::npos);
  options.seq_len = 8;
  options.max_segments = 9;
  EXPECT_NE(message(options).find("max_segments must be between 1 and seq_len (8)"),
            std::string::npos);
  options.max_segments = 8;
  options.open_rows = PackOptions::kMaxOpenRows + 1;
  EXPECT_NE(message(options).find("open_rows must be between 1 and 1048576"), std::string::npos);
}

}  // namespace
}  // namespace feedline::text
