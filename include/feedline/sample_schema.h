// SampleSchema: the typed description of one sample's tree, as a Python
// dataset returned it (or a native dataset declared it). A sample travels
// through the loader as flat fields; the schema says how they nest: which
// containers (tuple, list, dict, namedtuple) hold which leaves, what each
// leaf is (a numeric tensor and its dtype, a Python number, a
// torch.bfloat16 tensor, any other object), and where a container's own
// class is found (module and qualified name), so that a batch can be given
// back in the sample's shape. Each leaf is one field, named by its path as a
// user writes it: "0", "image", "meta[0][\"box\"]".
//
// The nodes are stored flat, in preorder: a container's children follow it,
// and each node knows how many nodes its subtree holds. Worker processes send
// their samples' schemas to the parent as typed data
// (src/process/worker_protocol.h).
//
// Thread safety: a value type; const methods may be called concurrently.
#ifndef FEEDLINE_SAMPLE_SCHEMA_H_
#define FEEDLINE_SAMPLE_SCHEMA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/tensor.h"

namespace feedline {

enum class SchemaKind : uint8_t {
  kTensor = 0,      // a numeric array (or numpy scalar): a field of the node's dtype
  kScalar = 1,      // a Python bool, int or float: a 0-d field
  kBFloat16 = 2,    // a torch.bfloat16 tensor: its bits in a float16 field
  kObject = 3,      // any other object: its tagged bytes in a uint8 field
  kTuple = 4,
  kList = 5,
  kDict = 6,        // a dict, or a dict subclass (SchemaType names it)
  kNamedTuple = 7,  // its children's keys are its field names
};
inline constexpr SchemaKind kLastSchemaKind = SchemaKind::kNamedTuple;

// What a leaf's value was in the sample, beyond its field's dtype: a front
// end hands a collate_fn the sample back as it was (a Python int stays an
// int, a torch tensor a tensor).
enum class LeafType : uint8_t {
  kDeclared = 0,     // declared by a native dataset, or a container
  kNumpyArray = 1,
  kNumpyScalar = 2,
  kTorchTensor = 3,
  kPaddleTensor = 4,
  kBool = 5,
  kInt = 6,
  kFloat = 7,
  kOther = 8,        // an object, or another array-like value numpy took
};
inline constexpr LeafType kLastLeafType = LeafType::kOther;

// Where a container's class is found: `module` and the attribute path in it
// (`qualname`). Empty for the built-in tuple, list and dict. `locatable` is
// false for a class its module does not name (one defined inside a
// function): a front end then cannot rebuild it, and keeps its own shapes.
struct SchemaType {
  std::string module;
  std::string qualname;
  bool locatable = true;

  bool builtin() const { return module.empty() && qualname.empty(); }
  bool operator==(const SchemaType&) const = default;
};

struct SchemaNode {
  SchemaKind kind = SchemaKind::kTensor;
  LeafType leaf_type = LeafType::kDeclared;
  // A leaf's field dtype (kF16 for bfloat16, kU8 for objects); kU8 for containers.
  DType dtype = DType::kU8;
  std::string key;   // in its parent: a dict key, a namedtuple field, a sequence index
  std::string path;  // from the root ("meta[0][\"box\"]"); a leaf's field name; "" for the root
  SchemaType type;   // kDict and kNamedTuple: the container's class
  uint32_t size = 1; // nodes in this subtree, itself included

  bool is_leaf() const { return kind < SchemaKind::kTuple; }
  bool is_sequence() const {
    return kind == SchemaKind::kTuple || kind == SchemaKind::kList ||
           kind == SchemaKind::kNamedTuple;
  }
  bool operator==(const SchemaNode&) const = default;
};

class FEEDLINE_EXPORT SampleSchema {
 public:
  static constexpr size_t kNoParent = static_cast<size_t>(-1);

  // Empty: no sample described yet.
  SampleSchema() = default;

  // A native dataset's declared fields: a tuple of tensor leaves.
  static SampleSchema Declared(const std::vector<std::string>& fields);

  bool empty() const { return nodes_.empty(); }
  size_t size() const { return nodes_.size(); }
  const SchemaNode& node(size_t i) const { return nodes_[i]; }
  const SchemaNode& root() const { return nodes_.front(); }
  const std::vector<SchemaNode>& nodes() const { return nodes_; }

  // The indices of node `i`'s children, in order.
  std::vector<size_t> Children(size_t i) const;
  // One past node `i`'s subtree: its first child is i + 1, and the sibling
  // after child c is End(c).
  size_t End(size_t i) const { return i + nodes_[i].size; }
  // The leaves' field names, in preorder (the order of the sample's fields).
  std::vector<std::string> FieldNames() const;

  // Building, in preorder: `parent` is kNoParent for the root, else an open
  // container. The node's path is made from the parent's and `key`: a
  // sequence's child by its position ("[1]"), a dict's by its key
  // ("[\"box\"]"); the root's children are named by their key alone. Returns
  // the new node's index.
  size_t AddLeaf(size_t parent, SchemaKind kind, LeafType leaf_type, DType dtype, std::string key);
  size_t OpenContainer(size_t parent, SchemaKind kind, std::string key, SchemaType type = {});
  // Ends container `index`: its subtree is the nodes added since.
  void CloseContainer(size_t index);

  // True if two leaves have the same path (a dict key such as "a[0]" beside
  // a list "a"); `*path` then names it.
  bool HasDuplicatePath(std::string* path) const;

  bool operator==(const SampleSchema& other) const { return nodes_ == other.nodes_; }

 private:
  size_t Add(size_t parent, SchemaNode node);

  std::vector<SchemaNode> nodes_;
  std::vector<uint32_t> child_counts_;  // while building: children added to each node
};

// "tensor", "scalar", "bfloat16", "object", "tuple", "list", "dict", "namedtuple".
FEEDLINE_EXPORT const char* SchemaKindName(SchemaKind kind);
// "declared", "numpy", "numpy-scalar", "tensor", "paddle-tensor", "bool",
// "int", "float", "object".
FEEDLINE_EXPORT const char* LeafTypeName(LeafType type);

}  // namespace feedline

#endif  // FEEDLINE_SAMPLE_SCHEMA_H_
