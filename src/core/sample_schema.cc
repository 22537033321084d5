#include "feedline/sample_schema.h"

#include <algorithm>
#include <utility>

#include "feedline/error.h"

namespace feedline {

SampleSchema SampleSchema::Declared(const std::vector<std::string>& fields) {
  SampleSchema schema;
  const size_t root = schema.OpenContainer(kNoParent, SchemaKind::kTuple, "");
  for (const std::string& field : fields) {
    schema.AddLeaf(root, SchemaKind::kTensor, LeafType::kDeclared, DType::kU8, field);
  }
  schema.CloseContainer(root);
  return schema;
}

std::vector<size_t> SampleSchema::Children(size_t i) const {
  std::vector<size_t> out;
  for (size_t c = i + 1; c < End(i); c = End(c)) out.push_back(c);
  return out;
}

std::vector<std::string> SampleSchema::FieldNames() const {
  std::vector<std::string> out;
  for (const SchemaNode& node : nodes_) {
    if (node.is_leaf()) out.push_back(node.path);
  }
  return out;
}

size_t SampleSchema::Add(size_t parent, SchemaNode node) {
  if (parent == kNoParent) {
    if (!nodes_.empty()) throw Error("SampleSchema: a schema has one root");
    if (node.is_leaf()) node.path = std::string(1, '0');  // a sample that is one value: field "0"
  } else {
    if (parent >= nodes_.size() || nodes_[parent].is_leaf()) {
      throw Error("SampleSchema: a node's parent must be a container");
    }
    const SchemaNode& up = nodes_[parent];
    const uint32_t position = child_counts_[parent]++;
    if (parent == 0) {
      // A tuple's elements are named by their keys ("0", "1": the caller
      // gives them; a native dataset's fields by name), a namedtuple's by
      // position, a dict's by key.
      node.path = up.kind == SchemaKind::kNamedTuple ? std::to_string(position) : node.key;
    } else if (up.is_sequence()) {
      node.path = up.path + "[" + std::to_string(position) + "]";
    } else {
      node.path = up.path + "[\"" + node.key + "\"]";
    }
  }
  nodes_.push_back(std::move(node));
  child_counts_.push_back(0);
  return nodes_.size() - 1;
}

size_t SampleSchema::AddLeaf(size_t parent, SchemaKind kind, LeafType leaf_type, DType dtype,
                             std::string key) {
  SchemaNode node;
  node.kind = kind;
  node.leaf_type = leaf_type;
  node.dtype = dtype;
  node.key = std::move(key);
  if (!node.is_leaf()) throw Error("SampleSchema::AddLeaf: a container is not a leaf");
  return Add(parent, std::move(node));
}

size_t SampleSchema::OpenContainer(size_t parent, SchemaKind kind, std::string key,
                                   SchemaType type) {
  SchemaNode node;
  node.kind = kind;
  node.key = std::move(key);
  node.type = std::move(type);
  if (node.is_leaf()) throw Error("SampleSchema::OpenContainer: a leaf is not a container");
  return Add(parent, std::move(node));
}

void SampleSchema::CloseContainer(size_t index) {
  nodes_[index].size = static_cast<uint32_t>(nodes_.size() - index);
}

bool SampleSchema::HasDuplicatePath(std::string* path) const {
  std::vector<const std::string*> paths;
  for (const SchemaNode& node : nodes_) {
    if (node.is_leaf()) paths.push_back(&node.path);
  }
  std::sort(paths.begin(), paths.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  for (size_t i = 1; i < paths.size(); ++i) {
    if (*paths[i] == *paths[i - 1]) {
      *path = *paths[i];
      return true;
    }
  }
  return false;
}

const char* SchemaKindName(SchemaKind kind) {
  switch (kind) {
    case SchemaKind::kTensor: return "tensor";
    case SchemaKind::kScalar: return "scalar";
    case SchemaKind::kBFloat16: return "bfloat16";
    case SchemaKind::kObject: return "object";
    case SchemaKind::kTuple: return "tuple";
    case SchemaKind::kList: return "list";
    case SchemaKind::kDict: return "dict";
    case SchemaKind::kNamedTuple: return "namedtuple";
  }
  return "unknown";
}

const char* LeafTypeName(LeafType type) {
  switch (type) {
    case LeafType::kDeclared: return "declared";
    case LeafType::kNumpyArray: return "numpy";
    case LeafType::kNumpyScalar: return "numpy-scalar";
    case LeafType::kTorchTensor: return "tensor";
    case LeafType::kPaddleTensor: return "paddle-tensor";
    case LeafType::kBool: return "bool";
    case LeafType::kInt: return "int";
    case LeafType::kFloat: return "float";
    case LeafType::kOther: return "object";
  }
  return "unknown";
}

}  // namespace feedline
