#include "python/sample_structure.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "python/bfloat16_fields.h"
#include "python/dlpack_export.h"
#include "python/object_fields.h"
#include "python/pickled_fields.h"
#include "python/python_support.h"

namespace feedline::python {
namespace {

// The feedline dtype a numpy array is stored as, or false if none fits.
bool ChooseDType(const py::dtype& dtype, DType* out) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'b':
      *out = DType::kBool;
      return true;
    case 'u':
      // uint32 and uint64 widen to int64 (torch 1.13 has neither dtype).
      *out = size == 1 ? DType::kU8 : (size == 2 ? DType::kU16 : DType::kI64);
      return true;
    case 'i':
      *out = size == 1 ? DType::kI8
             : size == 2 ? DType::kI16
             : size == 4 ? DType::kI32
                         : DType::kI64;
      return true;
    case 'f':
      // float128 narrows to float64, the widest dtype torch and Paddle have.
      *out = size == 2 ? DType::kF16 : (size == 4 ? DType::kF32 : DType::kF64);
      return true;
    default:
      return false;
  }
}

// `array` is a field's value as a numeric numpy array (IsObjectValue
// converted it and sent everything else to FillObjectField).
void FillField(const std::string& name, DType dtype, py::array array, const AllocateFn& allocate) {
  const bool value_dtype_is_u64 = array.dtype().kind() == 'u' && array.dtype().itemsize() == 8;
  // Converts and makes contiguous only when needed.
  py::dtype target = NumpyDType(dtype);
  if (!array.dtype().is(target) && !array.dtype().equal(target)) {
    array = py::reinterpret_steal<py::array>(py::detail::npy_api::get().PyArray_FromAny_(
        array.ptr(), target.release().ptr(), 0, 0,
        py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_,
        nullptr));
    if (!array) throw py::error_already_set();
  } else if (!(array.flags() & py::array::c_style)) {
    array = py::array::ensure(array, py::array::c_style);
  }
  if (array.ndim() > Shape::kMaxRank) {
    throw SampleError(FailureKind::kType, "",
                      "field '" + name + "' has " + std::to_string(array.ndim()) +
                          " dimensions; at most " + std::to_string(Shape::kMaxRank) +
                          " are supported");
  }
  if (value_dtype_is_u64 && array.size() > 0) {
    // Stored as int64: a value past its range would come back negative.
    const auto* values = static_cast<const int64_t*>(array.data());
    for (py::ssize_t i = 0; i < array.size(); ++i) {
      if (values[i] < 0) {
        throw SampleError(FailureKind::kType, "",
                          "field '" + name + "' holds the uint64 value " +
                              std::to_string(static_cast<uint64_t>(values[i])) +
                              ", above the int64 range that feedline stores integers in");
      }
    }
  }
  Shape shape;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) shape.push_back(array.shape(d));
  Tensor tensor = allocate(name, dtype, shape);
  if (tensor.bytes() > 0) std::memcpy(tensor.raw(), array.data(), tensor.bytes());
}

// ---------------------------------------------------------------------------
// Describing a sample.

// Where `type` (a namedtuple or dict subclass) is found, asked of
// feedline/_sample_types.py once per class: a class its module does not
// name (defined in a function) is not locatable.
const SchemaType& LocateType(py::handle type) {
  // Classes live as long as the interpreter in practice; each one cached is
  // held, so that its address is never another class's.
  static auto* cache = new std::unordered_map<PyObject*, SchemaType>();
  auto found = cache->find(type.ptr());
  if (found != cache->end()) return found->second;
  SchemaType out;
  try {
    out.module = py::str(type.attr("__module__"));
    out.qualname = py::str(type.attr("__qualname__"));
    py::object where = py::module_::import("feedline._sample_types").attr("locate")(type);
    if (where.is_none()) {
      out.locatable = false;
    } else {
      out.qualname = py::str(where);
    }
  } catch (py::error_already_set&) {
    out.locatable = false;  // the class is its own business; batches keep feedline's shapes
  }
  type.inc_ref();
  return cache->emplace(type.ptr(), std::move(out)).first->second;
}

bool IsNumpyScalar(PyObject* value) {
  static PyObject* generic = [] {
    return py::object(py::module_::import("numpy").attr("generic")).release().ptr();
  }();
  return PyObject_IsInstance(value, generic) == 1;
}

// Whether `value` is an instance of `module`.Tensor, for a module already
// imported (a dataset that returns torch tensors imported torch).
bool IsTensorOf(const py::handle& value, const char* module) {
  py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains(module)) return false;
  py::object tensor = py::getattr(modules[module], "Tensor", py::none());
  return !tensor.is_none() && PyObject_IsInstance(value.ptr(), tensor.ptr()) == 1;
}

LeafType LeafTypeOf(const py::handle& value) {
  PyObject* v = value.ptr();
  // numpy scalars first: np.float64 is also a Python float.
  if (IsNumpyScalar(v)) return LeafType::kNumpyScalar;
  if (PyBool_Check(v)) return LeafType::kBool;
  if (PyLong_Check(v)) return LeafType::kInt;
  if (PyFloat_Check(v)) return LeafType::kFloat;
  if (py::isinstance<py::array>(value)) return LeafType::kNumpyArray;
  if (PyUnicode_Check(v) || PyBytes_Check(v) || value.is_none()) return LeafType::kOther;
  if (IsTensorOf(value, "paddle")) return LeafType::kPaddleTensor;
  if (IsTensorOf(value, "torch")) return LeafType::kTorchTensor;
  return LeafType::kOther;
}

std::string KeyName(const py::handle& key) { return py::str(key); }

// One walk over a sample: its schema, and each leaf's value in field order
// (with its numeric array, or the bits of a bfloat16 tensor; null for an
// object).
struct SampleWalk {
  SampleSchema schema;
  std::vector<py::handle> values;
  std::vector<py::object> arrays;
  bool bracket_in_key = false;  // a key that could make two paths equal

  void Root(const py::handle& item) {
    PyObject* v = item.ptr();
    if (PyTuple_Check(v) || PyList_Check(v) || PyDict_Check(v)) {
      Container(SampleSchema::kNoParent, "", item);
    } else {
      Leaf(SampleSchema::kNoParent, "", item);
    }
  }

  // A non-empty tuple, list or dict inside the sample is a container; an
  // empty one is a leaf (an object field): it has no elements to collate.
  void Value(size_t parent, std::string key, const py::handle& value) {
    PyObject* v = value.ptr();
    const bool sequence = (PyTuple_Check(v) || PyList_Check(v)) && PySequence_Fast_GET_SIZE(v) > 0;
    if (sequence || (PyDict_Check(v) && PyDict_Size(v) > 0)) {
      Container(parent, std::move(key), value);
    } else {
      Leaf(parent, std::move(key), value);
    }
  }

  void Container(size_t parent, std::string key, const py::handle& value) {
    PyObject* v = value.ptr();
    const py::handle type(reinterpret_cast<PyObject*>(Py_TYPE(v)));
    if (PyDict_Check(v)) {
      const size_t node = schema.OpenContainer(
          parent, SchemaKind::kDict, std::move(key),
          PyDict_CheckExact(v) ? SchemaType{} : LocateType(type));
      PyObject* k;
      PyObject* item;
      Py_ssize_t position = 0;
      while (PyDict_Next(v, &position, &k, &item)) {
        std::string name = KeyName(k);
        bracket_in_key = bracket_in_key || name.find('[') != std::string::npos;
        Value(node, std::move(name), item);
      }
      schema.CloseContainer(node);
      return;
    }
    // A namedtuple (a tuple class with _fields, as torch's collate tells it).
    py::object fields;
    if (PyTuple_Check(v) && !PyTuple_CheckExact(v)) fields = py::getattr(type, "_fields", py::none());
    const bool named = fields && !fields.is_none();
    const SchemaKind kind = named ? SchemaKind::kNamedTuple
                                  : (PyTuple_Check(v) ? SchemaKind::kTuple : SchemaKind::kList);
    const size_t node =
        schema.OpenContainer(parent, kind, std::move(key), named ? LocateType(type) : SchemaType{});
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    const py::tuple names = named ? py::tuple(fields) : py::tuple();
    for (Py_ssize_t i = 0; i < n; ++i) {
      std::string name = std::to_string(i);
      if (i < static_cast<Py_ssize_t>(names.size())) name = py::str(names[i]);
      Value(node, std::move(name), PySequence_Fast_GET_ITEM(v, i));
    }
    schema.CloseContainer(node);
  }

  void Leaf(size_t parent, std::string key, const py::handle& value) {
    py::object numeric;
    if (!IsObjectValue(value, &numeric)) {
      DType dtype = DType::kU8;
      py::array array = py::reinterpret_borrow<py::array>(numeric);
      if (!ChooseDType(array.dtype(), &dtype)) {
        throw Error("a field has dtype " + std::string(py::str(array.dtype())) +
                    ", which is not numeric");
      }
      const LeafType type = LeafTypeOf(value);
      const bool python_number =
          type == LeafType::kBool || type == LeafType::kInt || type == LeafType::kFloat;
      schema.AddLeaf(parent, python_number ? SchemaKind::kScalar : SchemaKind::kTensor, type,
                     dtype, std::move(key));
    } else if (TorchBFloat16Bits(value, &numeric)) {
      // numpy could not take it: a torch.bfloat16 tensor travels as its bits.
      schema.AddLeaf(parent, SchemaKind::kBFloat16, LeafType::kTorchTensor, DType::kF16,
                     std::move(key));
    } else {
      schema.AddLeaf(parent, SchemaKind::kObject, LeafType::kOther, DType::kU8, std::move(key));
    }
    values.push_back(value);
    arrays.push_back(std::move(numeric));
  }
};

// ---------------------------------------------------------------------------
// Checking a sample against the first.

// What a leaf holds, for messages: the kinds that must not change.
int LeafClass(const SchemaNode& node) {
  if (node.kind == SchemaKind::kObject) return 1;
  return node.kind == SchemaKind::kBFloat16 ? 2 : 0;
}

const char* LeafClassText(const SchemaNode& node) {
  switch (LeafClass(node)) {
    case 1: return "an object (not a numeric array)";
    case 2: return "a torch.bfloat16 tensor";
    default: return "a numeric array";
  }
}

// The first leaf of node `i`'s subtree (a container always has one: an
// empty container is a leaf).
const std::string& FirstLeafPath(const SampleSchema& schema, size_t i) {
  while (!schema.node(i).is_leaf()) ++i;
  return schema.node(i).path;
}

const char* const kSameElements =
    ": nested tuples, lists and dicts must have the same elements in every sample";

// Throws SampleError where node `i` of `sample` differs from node `j` of
// `first` (the same place in both trees).
void Compare(const SampleSchema& sample, size_t i, const SampleSchema& first, size_t j) {
  const SchemaNode& a = sample.node(i);
  const SchemaNode& b = first.node(j);
  if (a.is_leaf() && b.is_leaf()) {
    if (LeafClass(a) == LeafClass(b)) return;
    if (i == 0) {
      throw SampleError(FailureKind::kType, "",
                        std::string("the sample is ") + LeafClassText(a) +
                            " but the first sample was " + LeafClassText(b));
    }
    // A top-level element or key, or a nested leaf by its path.
    const bool top = a.path.find('[') == std::string::npos;
    const bool in_dict = first.root().kind == SchemaKind::kDict;
    const std::string where = !top      ? "'" + a.path + "'"
                              : in_dict ? "key '" + a.path + "'"
                                        : "element " + a.path;
    throw SampleError(FailureKind::kType, "",
                      where + " of the sample is " + LeafClassText(a) +
                          " but in the first sample it was " + LeafClassText(b));
  }
  if (a.is_leaf() || b.is_leaf()) {
    throw SampleError(FailureKind::kType, "",
                      "'" + a.path +
                          (a.is_leaf() ? "' of the sample is not a tuple, list or dict, but in "
                                         "the first sample it was one"
                                       : "' of the sample is a tuple, list or dict, but in the "
                                         "first sample it was not"));
  }
  const bool root = i == 0;
  if (a.is_sequence() != b.is_sequence()) {
    throw SampleError(FailureKind::kType, "",
                      "the sample has '" + FirstLeafPath(sample, i + 1) +
                          "', which the first sample did not have" + kSameElements);
  }
  if (a.is_sequence()) {
    size_t c = i + 1;
    size_t d = j + 1;
    for (; c < sample.End(i) && d < first.End(j); c = sample.End(c), d = first.End(d)) {
      Compare(sample, c, first, d);
    }
    if (c < sample.End(i)) {
      throw SampleError(FailureKind::kType, "",
                        "the sample has '" + FirstLeafPath(sample, c) +
                            "', which the first sample did not have" + kSameElements);
    }
    if (d < first.End(j)) {
      throw SampleError(FailureKind::kType, "",
                        "the sample lacks '" + FirstLeafPath(first, d) +
                            "', which the first sample had" + kSameElements);
    }
    return;
  }
  // Dicts: matched by key. A top-level dict's keys may come and go.
  auto find = [](const SampleSchema& schema, size_t parent, const std::string& key) {
    for (size_t c = parent + 1; c < schema.End(parent); c = schema.End(c)) {
      if (schema.node(c).key == key) return c;
    }
    return schema.End(parent);
  };
  for (size_t c = i + 1; c < sample.End(i); c = sample.End(c)) {
    const size_t d = find(first, j, sample.node(c).key);
    if (d < first.End(j)) {
      Compare(sample, c, first, d);
    } else if (!root) {
      throw SampleError(FailureKind::kType, "",
                        "the sample has '" + FirstLeafPath(sample, c) +
                            "', which the first sample did not have" + kSameElements);
    }
  }
  if (root) return;
  for (size_t d = j + 1; d < first.End(j); d = first.End(d)) {
    if (find(sample, i, first.node(d).key) == sample.End(i)) {
      throw SampleError(FailureKind::kType, "",
                        "the sample lacks '" + FirstLeafPath(first, d) +
                            "', which the first sample had" + kSameElements);
    }
  }
}

const char* KindName(Structure::Kind kind) {
  switch (kind) {
    case Structure::kSingle:
      return "single";
    case Structure::kTuple:
      return "tuple";
    case Structure::kDict:
      return "dict";
    default:
      return "unknown";
  }
}

// ---------------------------------------------------------------------------
// Shaping a batch (or a sample) by the schema.

// The fields of a batch or sample by name, each taken at most once; the
// schema's leaves come in field order, so the next field is tried first.
class FieldTable {
 public:
  explicit FieldTable(std::vector<std::string_view> names)
      : names_(std::move(names)), taken_(names_.size(), false) {}

  // The index of unused field `name`, or size() if there is none.
  size_t Find(std::string_view name) const {
    if (next_ < names_.size() && !taken_[next_] && names_[next_] == name) return next_;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (!taken_[i] && names_[i] == name) return i;
    }
    return names_.size();
  }
  void Take(size_t i) {
    taken_[i] = true;
    next_ = i + 1;
  }
  bool taken(size_t i) const { return taken_[i]; }
  size_t size() const { return names_.size(); }
  std::string_view name(size_t i) const { return names_[i]; }

 private:
  std::vector<std::string_view> names_;
  std::vector<bool> taken_;
  size_t next_ = 0;
};

// Rebuilds the sample's tree from fields; `value(i, leaf)` makes field i's
// Python value (leaf: the schema's node, null for a field the schema does
// not name).
class TreeBuilder {
 public:
  using ValueFn = std::function<py::object(size_t, const SchemaNode*)>;
  // Every sequence becomes a tuple (feedline's collate; a collate_fn's batch
  // is handed on as it was returned and never built here).
  TreeBuilder(const SampleSchema& schema, FieldTable& fields, ValueFn value, bool extras)
      : schema_(schema), fields_(fields), value_(std::move(value)), extras_(extras) {}

  py::object Root() {
    const SchemaNode& root = schema_.root();
    if (root.is_leaf()) {
      py::list out;
      out.append(Leaf(0));
      AppendRest(out);
      return out.size() == 1 ? py::object(out[0]) : py::object(py::tuple(out));
    }
    if (root.is_sequence()) {
      py::list out;
      for (size_t c = 1; c < schema_.End(0); c = schema_.End(c)) out.append(Node(c));
      AppendRest(out);
      return Sequence(root, std::move(out));
    }
    // A top-level dict: a key this batch lacks is left out (keys may come
    // and go), and every other field follows under its own name.
    py::dict out;
    for (size_t c = 1; c < schema_.End(0); c = schema_.End(c)) {
      if (fields_.Find(FirstLeafPath(schema_, c)) == fields_.size()) continue;
      out[py::str(schema_.node(c).key)] = Node(c);
    }
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (!fields_.taken(i)) out[py::str(std::string(fields_.name(i)))] = value_(i, nullptr);
    }
    return out;
  }

 private:
  py::object Leaf(size_t n) {
    const SchemaNode& node = schema_.node(n);
    const size_t i = fields_.Find(node.path);
    if (i == fields_.size()) throw Error("the batch has no field '" + node.path + "'");
    fields_.Take(i);
    return value_(i, &node);
  }

  // A padded leaf's "<path>_lengths", if the batch has it: shown beside the
  // leaf in its container.
  size_t LengthsOf(size_t n) {
    const SchemaNode& node = schema_.node(n);
    if (!extras_ || !node.is_leaf()) return fields_.size();
    const size_t i = fields_.Find(node.path + "_lengths");
    if (i < fields_.size()) fields_.Take(i);
    return i;
  }

  py::object Node(size_t n) {
    const SchemaNode& node = schema_.node(n);
    if (node.is_leaf()) return Leaf(n);
    if (node.is_sequence()) {
      py::list out;
      for (size_t c = n + 1; c < schema_.End(n); c = schema_.End(c)) out.append(Node(c));
      for (size_t c = n + 1; c < schema_.End(n); c = schema_.End(c)) {
        const size_t lengths = LengthsOf(c);
        if (lengths < fields_.size()) out.append(value_(lengths, nullptr));
      }
      return Sequence(node, std::move(out));
    }
    py::dict out;
    for (size_t c = n + 1; c < schema_.End(n); c = schema_.End(c)) {
      out[py::str(schema_.node(c).key)] = Node(c);
    }
    for (size_t c = n + 1; c < schema_.End(n); c = schema_.End(c)) {
      const size_t lengths = LengthsOf(c);
      if (lengths < fields_.size()) {
        out[py::str(schema_.node(c).key + "_lengths")] = value_(lengths, nullptr);
      }
    }
    return out;
  }

  py::object Sequence(const SchemaNode&, py::list out) const { return py::tuple(out); }

  void AppendRest(py::list& out) {
    if (!extras_) return;
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (!fields_.taken(i)) out.append(value_(i, nullptr));
    }
  }

  const SampleSchema& schema_;
  FieldTable& fields_;
  ValueFn value_;
  bool extras_;
};

}  // namespace

Structure::Kind RootKind(const SampleSchema& schema) {
  if (schema.empty()) return Structure::kUnknown;
  const SchemaNode& root = schema.root();
  if (root.is_leaf()) return Structure::kSingle;
  return root.kind == SchemaKind::kDict ? Structure::kDict : Structure::kTuple;
}

void Structure::Declare(Kind kind, std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  schema_ = SampleSchema::Declared(names);
  names_ = std::move(names);
  declared_ = true;
  kind_.store(kind, std::memory_order_release);
}

void Structure::DeclareObjectFields(std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  object_fields_ = std::move(names);
  if (!declared_) return;
  // The declared tuple again, its object fields as object leaves.
  SampleSchema schema;
  const size_t root = schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kTuple, "");
  for (const std::string& field : names_) {
    const bool object = IsDeclaredObjectField(field);
    schema.AddLeaf(root, object ? SchemaKind::kObject : SchemaKind::kTensor, LeafType::kDeclared,
                   DType::kU8, field);
  }
  schema.CloseContainer(root);
  schema_ = std::move(schema);
}

bool Structure::IsDeclaredObjectField(std::string_view name) const {
  return std::find(object_fields_.begin(), object_fields_.end(), name) != object_fields_.end();
}

void Structure::Observe(const SampleSchema& schema) {
  if (!torch_bfloat16_) {
    for (const SchemaNode& node : schema.nodes()) {
      if (node.kind == SchemaKind::kBFloat16) {
        throw SampleError(FailureKind::kType, "", BFloat16RefusedMessage(node.path));
      }
    }
  }
  const Kind kind = RootKind(schema);
  Kind known = this->kind();
  if (known == kUnknown) {
    std::lock_guard<std::mutex> lock(mu_);
    known = kind_.load(std::memory_order_relaxed);
    if (known == kUnknown) {
      schema_ = schema;
      names_ = schema.FieldNames();
      kind_.store(kind, std::memory_order_release);
      return;
    }
  }
  // A declared layout (a native dataset's fields) is not a Python sample's.
  if (declared_ || schema == schema_) return;
  auto elements = [](const SampleSchema& s) { return s.Children(0).size(); };
  if (known != kind || (kind == kTuple && elements(schema) != elements(schema_))) {
    auto describe = [&](Kind k, const SampleSchema& s) {
      return k == kTuple ? "a tuple of " + std::to_string(elements(s)) : std::string(KindName(k));
    };
    throw SampleError(FailureKind::kType, "",
                      "the sample is " + describe(kind, schema) + " but the first sample was " +
                          describe(known, schema_));
  }
  Compare(schema, 0, schema_, 0);
}

namespace {

SampleWalk Walk(const py::handle& item) {
  SampleWalk walk;
  walk.Root(item);
  std::string duplicate;
  if (walk.bracket_in_key && walk.schema.HasDuplicatePath(&duplicate)) {
    throw SampleError(FailureKind::kType, "",
                      "the sample has two values at '" + duplicate +
                          "' (a dict key that reads as a path): rename the key");
  }
  return walk;
}

void Write(SampleWalk& walk, const AllocateFn& allocate) {
  size_t leaf = 0;
  for (const SchemaNode& node : walk.schema.nodes()) {
    if (!node.is_leaf()) continue;
    py::object& array = walk.arrays[leaf];
    if (array) {
      FillField(node.path, node.dtype, py::reinterpret_steal<py::array>(array.release()),
                allocate);
    } else {
      FillObjectField(node.path, walk.values[leaf], allocate);
    }
    ++leaf;
  }
}

// The field holding a sample carried whole (its pickle stream).
constexpr const char* kWholeSampleField = "sample";

// `item` pickled into fields, as a SampleError if it cannot be pickled.
void FillWhole(const py::handle& item, const AllocateFn& allocate) {
  try {
    FillPickledFields(item, kWholeSampleField, allocate);
  } catch (py::error_already_set& e) {
    if (IsInterrupt(e)) throw;
    throw SampleError(FailureKind::kType, "",
                      "the sample cannot be handed to collate_fn: pickling it raised " +
                          PythonErrorText(e));
  }
}

}  // namespace

const SampleSchema& WholeSampleSchema() {
  static const SampleSchema* const schema = [] {
    auto* s = new SampleSchema();
    s->AddLeaf(SampleSchema::kNoParent, SchemaKind::kObject, LeafType::kDeclared, DType::kU8,
               kWholeSampleField);
    return s;
  }();
  return *schema;
}

SampleSchema FillSample(const py::handle& item, bool whole, const AllocateFn& allocate) {
  if (whole) {
    FillWhole(item, allocate);
    return WholeSampleSchema();
  }
  SampleWalk walk = Walk(item);
  Write(walk, allocate);
  return std::move(walk.schema);
}

void FillFields(const py::handle& item, Structure& structure, const AllocateFn& allocate) {
  if (structure.carries_whole()) {
    FillWhole(item, allocate);
    structure.Observe(WholeSampleSchema());
    return;
  }
  // Checked before any field is written.
  SampleWalk walk = Walk(item);
  structure.Observe(walk.schema);
  Write(walk, allocate);
}

namespace {

// The field of `batch` named `name`, or null.
const Tensor* FindField(const Batch& batch, const std::string& name) {
  for (int f = 0; f < batch.num_fields(); ++f) {
    if (batch.field_name(f) == name) return &batch.field(f);
  }
  return nullptr;
}

// `name` is the "_lengths" field of one of a native dataset's object fields.
bool IsLengthsOfDeclaredObject(std::string_view name, const Structure& structure) {
  constexpr std::string_view kSuffix = "_lengths";
  return name.size() > kSuffix.size() && name.ends_with(kSuffix) &&
         structure.IsDeclaredObjectField(name.substr(0, name.size() - kSuffix.size()));
}

}  // namespace

py::object SampleToPython(const Sample& sample, const Structure& structure) {
  if (structure.carries_whole()) return LoadPickledCopy(sample, kWholeSampleField);
  std::vector<std::string_view> names;
  for (int i = 0; i < sample.num_fields(); ++i) names.emplace_back(sample.field_name(i));
  FieldTable fields(std::move(names));
  auto value = [&](size_t i, const SchemaNode* leaf) -> py::object {
    const Tensor& tensor = sample.field(static_cast<int>(i));
    const SchemaKind kind = leaf != nullptr ? leaf->kind : SchemaKind::kTensor;
    if (kind == SchemaKind::kObject) return DecodeObject(tensor);
    py::array array = CopyToArray(tensor);
    // A torch tensor, as the dataset gave it.
    if (kind == SchemaKind::kBFloat16) return TorchBFloat16FromBits(array);
    // A scalar goes to Python as a numpy scalar, as the dataset gave it.
    return tensor.shape().rank() == 0 ? py::object(array[py::tuple()]) : py::object(array);
  };
  if (structure.kind() == Structure::kUnknown) {
    py::dict out;
    for (int i = 0; i < sample.num_fields(); ++i) {
      const std::string name(sample.field_name(i));
      out[py::str(name)] = structure.IsDeclaredObjectField(name)
                               ? DecodeObject(sample.field(i))
                               : value(i, nullptr);
    }
    return out;
  }
  return TreeBuilder(structure.schema(), fields, value, /*extras=*/false).Root();
}

py::object ShapeBatch(const Batch& batch, const Structure& structure, bool dlpack_leaves) {
  // One capsule owns a copy of the handle; every array keeps it alive.
  const py::capsule owner = BatchOwner(batch);
  const int n = batch.num_fields();
  std::vector<std::string_view> names;
  for (int i = 0; i < n; ++i) names.emplace_back(batch.field_name(i));
  FieldTable fields(std::move(names));
  // An object field's "_lengths" field is its own and is not shown.
  const bool known = structure.kind() != Structure::kUnknown;
  if (known) {
    for (const SchemaNode& node : structure.schema().nodes()) {
      if (node.kind != SchemaKind::kObject) continue;
      const size_t lengths = fields.Find(node.path + "_lengths");
      if (lengths < fields.size()) fields.Take(lengths);
    }
  }
  auto value = [&](size_t i, const SchemaNode* leaf) -> py::object {
    const Tensor& tensor = batch.field(static_cast<int>(i));
    const SchemaKind kind = leaf != nullptr ? leaf->kind : SchemaKind::kTensor;
    if (kind == SchemaKind::kObject) {
      return DecodeObjectField(tensor, FindField(batch, leaf->path + "_lengths"));
    }
    if (kind == SchemaKind::kBFloat16) return TorchBFloat16FromBits(ViewArray(tensor, owner));
    if (dlpack_leaves && ExportsThroughDLPack(batch, static_cast<int>(i))) {
      return MakeBatchArray(batch, static_cast<int>(i));
    }
    return ViewArray(tensor, owner);
  };
  if (!known) {
    py::dict out;
    for (int i = 0; i < n; ++i) {
      const std::string_view name = batch.field_name(i);
      if (structure.IsDeclaredObjectField(name)) {
        out[py::str(std::string(name))] =
            DecodeObjectField(batch.field(i), FindField(batch, std::string(name) + "_lengths"));
      } else if (!IsLengthsOfDeclaredObject(name, structure)) {
        out[py::str(std::string(name))] = value(i, nullptr);
      }
    }
    return out;
  }
  return TreeBuilder(structure.schema(), fields, value, /*extras=*/true).Root();
}

py::object StructureToPython(const Structure& structure) {
  const Structure::Kind kind = structure.kind();
  py::list names;
  if (kind != Structure::kUnknown) {
    for (const std::string& name : structure.names()) names.append(name);
  }
  return py::make_tuple(KindName(kind), names);
}

}  // namespace feedline::python
