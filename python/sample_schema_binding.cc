// feedline._feedline.SampleSchema and SchemaNode: a sample's schema
// (feedline/sample_schema.h) as Python objects, for the front ends
// (feedline/frontends/_shaping.py), which give batches the sample's own
// types from it. A SchemaNode views one node of a schema it keeps alive.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "feedline/sample_schema.h"
#include "python/python_support.h"
#include "python/sample_structure.h"

namespace feedline::python {
namespace {

struct NodeView {
  std::shared_ptr<const SampleSchema> schema;
  size_t index = 0;

  const SchemaNode& node() const { return schema->node(index); }
};

std::string Repr(const NodeView& view) {
  const SchemaNode& node = view.node();
  std::string out = std::string("SchemaNode(") + SchemaKindName(node.kind);
  if (!node.path.empty()) out += ", path=" + py::repr(py::str(node.path)).cast<std::string>();
  if (node.is_leaf()) {
    out += std::string(", dtype=") + DTypeName(node.dtype) + ", leaf_type=" +
           LeafTypeName(node.leaf_type);
  } else {
    if (!node.type.builtin()) out += ", type=" + node.type.module + "." + node.type.qualname;
    out += ", children=" + std::to_string(view.schema->Children(view.index).size());
  }
  return out + ")";
}

}  // namespace

void BindSampleSchema(py::module_& m) {
  py::class_<NodeView>(m, "SchemaNode",
                       "One node of a SampleSchema: a container (tuple, list, dict, namedtuple) "
                       "or a leaf (tensor, scalar, bfloat16, object).")
      .def_property_readonly("kind", [](const NodeView& v) { return SchemaKindName(v.node().kind); })
      .def_property_readonly("is_leaf", [](const NodeView& v) { return v.node().is_leaf(); })
      .def_property_readonly(
          "leaf_type", [](const NodeView& v) { return LeafTypeName(v.node().leaf_type); },
          "What the leaf was in the sample: 'numpy', 'numpy-scalar', 'tensor', "
          "'paddle-tensor', 'bool', 'int', 'float', 'object' ('declared' for a native "
          "dataset's field).")
      .def_property_readonly("dtype",
                             [](const NodeView& v) -> py::object {
                               if (!v.node().is_leaf()) return py::none();
                               return py::str(DTypeName(v.node().dtype));
                             })
      .def_property_readonly("key", [](const NodeView& v) { return v.node().key; })
      .def_property_readonly(
          "path", [](const NodeView& v) { return v.node().path; },
          "From the root, as written in Python (\"meta[0]['box']\" reads meta[0][\"box\"]); a "
          "leaf's field name.")
      .def_property_readonly("type_module", [](const NodeView& v) { return v.node().type.module; })
      .def_property_readonly("type_qualname",
                             [](const NodeView& v) { return v.node().type.qualname; })
      .def_property_readonly(
          "type_locatable", [](const NodeView& v) { return v.node().type.locatable; },
          "False for a container class its module does not name (defined in a function).")
      .def_property_readonly("children",
                             [](const NodeView& v) {
                               std::vector<NodeView> out;
                               for (size_t c : v.schema->Children(v.index)) {
                                 out.push_back(NodeView{v.schema, c});
                               }
                               return out;
                             })
      .def("__repr__", &Repr);

  py::class_<SampleSchema, std::shared_ptr<SampleSchema>>(
      m, "SampleSchema",
      "The typed description of a loader's first sample: its containers, their classes, and "
      "each leaf's kind and dtype. Each leaf is one field of the batch, named by its path.")
      .def_property_readonly("root",
                             [](const std::shared_ptr<SampleSchema>& s) {
                               return NodeView{s, 0};
                             })
      .def_property_readonly("fields", &SampleSchema::FieldNames,
                             "The leaves' field names, in the sample's order.")
      .def("__len__", &SampleSchema::size)
      .def("__eq__", [](const SampleSchema& a, const SampleSchema& b) { return a == b; },
           py::is_operator())
      .def("__repr__", [](const std::shared_ptr<SampleSchema>& s) {
        std::string out = "SampleSchema(";
        for (size_t i = 0; i < s->size(); ++i) {
          if (i > 0) out += ", ";
          out += Repr(NodeView{s, i});
        }
        return out + ")";
      });
}

py::object SchemaToPython(const Structure& structure) {
  if (!structure.described()) return py::none();
  return py::cast(std::make_shared<SampleSchema>(structure.schema()));
}

}  // namespace feedline::python
