#include "feedline/sample_schema.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline {
namespace {

TEST(SampleSchema, LeavesAreNamedByTheirPathAsWrittenInPython) {
  // (image, {"boxes": [a, b], "id": "x"})
  SampleSchema schema;
  const size_t root = schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kTuple, "");
  schema.AddLeaf(root, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8, "0");
  const size_t meta = schema.OpenContainer(root, SchemaKind::kDict, "1");
  const size_t boxes = schema.OpenContainer(meta, SchemaKind::kList, "boxes");
  schema.AddLeaf(boxes, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kF32, "0");
  schema.AddLeaf(boxes, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kF32, "1");
  schema.CloseContainer(boxes);
  schema.AddLeaf(meta, SchemaKind::kObject, LeafType::kOther, DType::kU8, "id");
  schema.CloseContainer(meta);
  schema.CloseContainer(root);

  EXPECT_EQ(schema.FieldNames(),
            (std::vector<std::string>{"0", "1[\"boxes\"][0]", "1[\"boxes\"][1]", "1[\"id\"]"}));
  EXPECT_EQ(schema.Children(root), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(schema.Children(meta), (std::vector<size_t>{3, 6}));
  EXPECT_EQ(schema.End(root), schema.size());
  EXPECT_EQ(schema.node(boxes).size, 3u);
  std::string duplicate;
  EXPECT_FALSE(schema.HasDuplicatePath(&duplicate));
}

TEST(SampleSchema, ANamedTuplesElementsAreNamedByPositionAndKeepTheirFieldNames) {
  SampleSchema schema;
  const size_t root = schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kNamedTuple, "",
                                           SchemaType{"records", "Pair", true});
  schema.AddLeaf(root, SchemaKind::kScalar, LeafType::kInt, DType::kI64, "label");
  const size_t inner = schema.OpenContainer(root, SchemaKind::kNamedTuple, "extra",
                                            SchemaType{"records", "Pair", true});
  schema.AddLeaf(inner, SchemaKind::kScalar, LeafType::kFloat, DType::kF32, "weight");
  schema.CloseContainer(inner);
  schema.CloseContainer(root);
  EXPECT_EQ(schema.FieldNames(), (std::vector<std::string>{"0", "1[0]"}));
  EXPECT_EQ(schema.node(3).key, "weight");
}

TEST(SampleSchema, ASampleThatIsOneValueIsFieldZero) {
  SampleSchema schema;
  schema.AddLeaf(SampleSchema::kNoParent, SchemaKind::kTensor, LeafType::kNumpyArray,
                 DType::kF32, "");
  EXPECT_EQ(schema.FieldNames(), (std::vector<std::string>{"0"}));
  EXPECT_TRUE(schema.root().is_leaf());
}

TEST(SampleSchema, DeclaredFieldsAreATupleOfTensors) {
  const SampleSchema schema = SampleSchema::Declared({"image", "label"});
  EXPECT_EQ(schema.root().kind, SchemaKind::kTuple);
  EXPECT_EQ(schema.FieldNames(), (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(schema.node(1).leaf_type, LeafType::kDeclared);
}

TEST(SampleSchema, AKeyThatReadsAsAnotherLeafsPathIsFound) {
  // {"a": [x], "a[0]": y}
  SampleSchema schema;
  const size_t root = schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kDict, "");
  const size_t a = schema.OpenContainer(root, SchemaKind::kList, "a");
  schema.AddLeaf(a, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8, "0");
  schema.CloseContainer(a);
  schema.AddLeaf(root, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8, "a[0]");
  schema.CloseContainer(root);
  std::string duplicate;
  ASSERT_TRUE(schema.HasDuplicatePath(&duplicate));
  EXPECT_EQ(duplicate, "a[0]");
}

TEST(SampleSchema, BuildingOutOfOrderIsRefused) {
  SampleSchema schema;
  const size_t leaf = schema.AddLeaf(SampleSchema::kNoParent, SchemaKind::kTensor,
                                     LeafType::kNumpyArray, DType::kU8, "");
  EXPECT_THROW(schema.AddLeaf(leaf, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8, "x"),
               Error);
  EXPECT_THROW(schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kTuple, ""), Error);
  EXPECT_THROW(schema.AddLeaf(SampleSchema::kNoParent, SchemaKind::kDict, LeafType::kDeclared,
                              DType::kU8, ""),
               Error);
}

TEST(SampleSchema, NamesOfKindsAndLeafTypes) {
  EXPECT_STREQ(SchemaKindName(SchemaKind::kNamedTuple), "namedtuple");
  EXPECT_STREQ(SchemaKindName(SchemaKind::kBFloat16), "bfloat16");
  EXPECT_STREQ(LeafTypeName(LeafType::kNumpyScalar), "numpy-scalar");
  EXPECT_STREQ(LeafTypeName(LeafType::kPaddleTensor), "paddle-tensor");
}

}  // namespace
}  // namespace feedline
