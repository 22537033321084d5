#include "feedline/text/token_dataset.h"

#include <gtest/gtest.h>

#include <vector>

#include "feedline/error.h"

namespace feedline::text {
namespace {

TEST(TokenDatasetTest, DocumentsAreSpansOfTheFlatArray) {
  TokenDataset docs({5, 6, 7, 8, 9}, {0, 3, 3, 5});
  ASSERT_EQ(docs.size(), 3);
  EXPECT_EQ(docs.Length(0), 3);
  EXPECT_EQ(docs.Length(1), 0);
  EXPECT_EQ(docs.Length(2), 2);
  EXPECT_EQ(docs.document(2)[1], 9);
  Sample sample;
  SampleContext ctx(0, 0, 0);
  docs.Get(0, sample, ctx);
  const Tensor& tokens = sample["input_ids"];
  ASSERT_EQ(tokens.dtype(), DType::kI64);
  ASSERT_EQ(tokens.elements(), 3);
  EXPECT_EQ(tokens.data<int64_t>()[2], 7);
  EXPECT_EQ(docs.Source(1), "document 1");
  EXPECT_THROW(docs.document(3), IndexError);
}

TEST(TokenDatasetTest, BadOffsetsAreRefused) {
  EXPECT_THROW(TokenDataset({1, 2}, {}), Error);
  EXPECT_THROW(TokenDataset({1, 2}, {1, 2}), Error);
  EXPECT_THROW(TokenDataset({1, 2}, {0, 2, 1}), Error);
  EXPECT_THROW(TokenDataset({1, 2}, {0, 1}), Error);
  EXPECT_THROW(TokenDataset({1, 2}, {0, 2}, ""), Error);
}

}  // namespace
}  // namespace feedline::text
