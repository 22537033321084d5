#!/usr/bin/env python3
"""Checks that the include graph of the source tree follows its layers.

The layers and what each may use are declared once, in cmake/layers.cmake,
which the build links by; this check reads that declaration and holds every
include to it:

- A library layer (feedline_library_layer: src/<name>/, part of libfeedline)
  may include its own headers and those of the layers it uses, directly or
  through them; never those of another layer, and no program layer's.
- A program layer (feedline_program_layer: synth, tools, python) is built on
  the library's public headers: it may include any header under
  include/feedline/ (the extension surface, include/feedline/extension/,
  included), its own and those of the program layers it uses, and no `src/`
  header of a library layer.
- A public header (include/) includes no `src/` header: it is installed, or
  read by the programs built on the public headers.

A layer's code is src/<name>/ if that directory exists, else <name>/; a
public header belongs to the layer that implements it: include/feedline/<name>/
to layer <name>, a top-level one or one of the extension surface
(include/feedline/extension/) to the directory whose .cc has its name
(feedline/batch.h: src/loader/batch.cc), or else to the layer
PUBLIC_HEADERS_WITHOUT_SOURCE names. Every `#include "src/..."`,
`"feedline/..."`, `"tools/..."` and `"python/..."` of src/, include/,
python/ and tools/ is checked.

docs/architecture.md shows the declaration under "Layers"; the check fails
when that copy differs from cmake/layers.cmake.

The declaration itself has no cycle: a layer may use only layers declared
before it (the build refuses one that does not, and so does this check).

Fails (exit status 1), naming each file, line and include that breaks the
declaration. Run from anywhere:
`python3 scripts/check_layering.py [repository root]`.
"""

import os
import re
import sys

DECLARATION = "cmake/layers.cmake"
# The doc shows the declaration, call for call, in the first code block of
# this section; the check fails when the two differ.
DOC, DOC_SECTION = "docs/architecture.md", "## Layers"

# Public headers that no .cc of the same name implements.
PUBLIC_HEADERS_WITHOUT_SOURCE = {
    "export.h": "core",
    # Header-only: the library and the command share it.
    "string_printf.h": "core",
    "sampler.h": "data",
    "batch_sampler.h": "data",
    "iterable_dataset.h": "data",
    "next_status.h": "loader",
    "tuning.h": "loader",
    # The umbrella header includes every top-level public header.
    "feedline.h": "loader_factory",
    # The extension surface (docs/architecture.md, "Extension surface").
    "extension/loader_spec.h": "loader_factory",
    "extension/worker_program.h": "process",
    "extension/worker_failure.h": "process",
    "extension/worker_processes.h": "process",
}

# The directory of public headers that extend the library (worker programs,
# loader construction): no layer of its own, each header belongs to the
# layer that implements it, as a top-level one does.
EXTENSION = "extension"

INCLUDE = re.compile(r'^\s*#\s*include\s*["<]((?:src|feedline|tools|python)/[^">]+)[">]')
CALL = re.compile(r"\b(feedline_(?:library|program)_layer)\s*\(([^)]*)\)")


class LayeringError(Exception):
    pass


class Layer:
    def __init__(self, name, kind, uses, target=None):
        self.name = name
        self.kind = kind  # "library" or "program"
        self.uses = uses  # as declared
        self.target = target
        self.may_use = set()  # itself, what it uses and what those may use


def calls_in(text):
    """(function, arguments) of each layer declaration in `text`, comments removed."""
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    return [(call, " ".join(arguments.split())) for call, arguments in CALL.findall(text)]


def doc_problems(root):
    """Where the doc's copy of the declaration differs from it."""
    with open(os.path.join(root, DECLARATION), encoding="utf-8") as f:
        declared = calls_in(f.read())
    with open(os.path.join(root, DOC), encoding="utf-8") as f:
        doc = f.read()
    start = doc.find(DOC_SECTION)
    block = doc[start:].split("```")[1] if start >= 0 and doc[start:].count("```") >= 2 else ""
    shown = calls_in(block)
    if shown == declared:
        return []
    return [f"{DOC}: the declaration shown under \"{DOC_SECTION}\" differs from {DECLARATION}; "
            "show its calls as written there:"] + [f"  {c}({a})" for c, a in declared]


def read_declaration(root):
    """The layers of cmake/layers.cmake, in declaration order, by name."""
    with open(os.path.join(root, DECLARATION), encoding="utf-8") as f:
        declared = calls_in(f.read())
    layers = {}
    for call, arguments in declared:
        words = arguments.split()
        if not words:
            raise LayeringError(f"{DECLARATION}: {call}() names no layer")
        name, rest = words[0], words[1:]
        kind = "library" if call == "feedline_library_layer" else "program"
        target = None
        if kind == "program":
            if rest[:1] != ["TARGET"] or len(rest) < 2:
                raise LayeringError(f"{DECLARATION}: {call}({name} ...) needs TARGET <target>")
            target, rest = rest[1], rest[2:]
        if rest and rest[0] == "USES":
            uses = rest[1:]
        elif rest:
            raise LayeringError(f"{DECLARATION}: {call}({name} ...): unexpected {' '.join(rest)}")
        else:
            uses = []
        if name in layers:
            raise LayeringError(f"{DECLARATION}: layer {name} is declared twice")
        layer = Layer(name, kind, uses, target)
        layer.may_use.add(name)
        for used in uses:
            if used not in layers:
                raise LayeringError(f"{DECLARATION}: layer {name} uses {used}, which is not "
                                    "declared before it")
            if layers[used].kind != kind:
                raise LayeringError(f"{DECLARATION}: {kind} layer {name} uses {used}, "
                                    f"a {layers[used].kind} layer")
            layer.may_use |= layers[used].may_use
        layers[name] = layer
    if not layers:
        raise LayeringError(f"{DECLARATION}: no layer declared")
    return layers


def folder_of(root, name):
    """Where layer `name`'s code is, relative to `root`."""
    return f"src/{name}" if os.path.isdir(os.path.join(root, "src", name)) else name


def source_files(root, layers):
    """The files whose includes are checked, as paths relative to `root`."""
    folders = ["include"] + sorted(folder_of(root, name) for name in layers)
    for top in folders:
        for folder, _, names in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(names):
                if name.endswith((".h", ".cc")):
                    yield os.path.relpath(os.path.join(folder, name), root)


def stems_of_sources(root, layers):
    """Maps a .cc's name without extension to the library layers holding one."""
    stems = {}
    for name, layer in layers.items():
        folder = os.path.join(root, "src", name)
        if layer.kind != "library" or not os.path.isdir(folder):
            continue
        for file in os.listdir(folder):
            if file.endswith(".cc"):
                stems.setdefault(file[: -len(".cc")], []).append(name)
    return stems


def layer_of_public_header(path, layers, stems):
    """The layer of `feedline/...`, a path under include/."""
    parts = path.split("/")
    if len(parts) == 3 and parts[1] in layers:
        return parts[1]
    if len(parts) == 3 and parts[1] == EXTENSION:
        name = f"{EXTENSION}/{parts[2]}"
    elif len(parts) != 2:
        raise LayeringError(f"{path}: no layer is named {parts[1]} ({DECLARATION})")
    else:
        name = parts[1]
    if name in PUBLIC_HEADERS_WITHOUT_SOURCE:
        return PUBLIC_HEADERS_WITHOUT_SOURCE[name]
    owners = stems.get(name.split("/")[-1][: -len(".h")], [])
    if len(owners) != 1:
        raise LayeringError(
            f"{path}: implemented in {len(owners)} layers "
            f"({', '.join(sorted(owners)) or 'none'}); name its layer in "
            "PUBLIC_HEADERS_WITHOUT_SOURCE (scripts/check_layering.py)")
    return owners[0]


def layer_of_path(path, layers, stems):
    """The layer of a file or include target: src/<dir>/..., feedline/..., include/feedline/...,
    tools/..., python/..."""
    if path.startswith("include/"):
        path = path[len("include/"):]
    if path.startswith("feedline/"):
        return layer_of_public_header(path, layers, stems)
    parts = path.split("/")
    name = parts[1] if parts[0] == "src" else parts[0]
    if name not in layers:
        folder = "/".join(parts[:2]) if parts[0] == "src" else parts[0]
        raise LayeringError(f"{path}: {folder} is in no layer (declare it in {DECLARATION})")
    return name


def problems_of(root, layers):
    """(problems, number of includes checked between layers)."""
    stems = stems_of_sources(root, layers)
    problems = []
    between = 0
    for path in source_files(root, layers):
        source = layers[layer_of_path(path, layers, stems)]
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = list(enumerate(f, 1))
        for number, line in lines:
            match = INCLUDE.match(line)
            if not match:
                continue
            included = match.group(1)
            target = layers[layer_of_path(included, layers, stems)]
            public = included.startswith("feedline/")
            where = f"{path}:{number}: includes \"{included}\""
            if path.startswith("include/") and not public:
                problems.append(f"{where}: a public header includes public headers only "
                                "(include/feedline/), no src/ header")
                continue
            if source.kind == "program" and target.kind == "library":
                if public:
                    continue
                problems.append(f"{where}: {source.name} is built on the public headers "
                                f"(include/feedline/, its extension surface included), not on "
                                f"{target.name}'s src/ headers")
                continue
            if target is source:
                continue
            between += 1
            if target.name not in source.may_use:
                if source.kind == "library" and target.kind == "program":
                    why = f"library layer {source.name} may not use program layer {target.name}"
                else:
                    allowed = ", ".join(sorted(source.may_use - {source.name})) or "none"
                    why = f"{source.name} may not use {target.name} (it may use: {allowed})"
                problems.append(f"{where}: {why}")
    return problems, between


# The Python package's base: feedline.io imports no package built on it
# (vision, hdf5, frontends, torch, paddle), however deep inside a function.
# The one exception is the alias feedline.io.HDF5Dataset, imported when first
# asked for by the package's __getattr__ (docs/architecture.md).
PYTHON_BASE = "python/feedline/io"
PYTHON_BASE_MAY_IMPORT = ("feedline.io", "feedline._feedline", "feedline._pickling",
                          "feedline._sample_types")
PYTHON_BASE_EXCEPTIONS = {("__init__.py", "feedline.hdf5")}
PYTHON_IMPORT = re.compile(r"^\s*(?:from\s+(feedline(?:\.\w+)*)\s+import\s+(\w+)|"
                           r"import\s+(feedline(?:\.\w+)*))")


def python_problems(root):
    """feedline.io's imports of a package above it."""
    problems = []
    base = os.path.join(root, PYTHON_BASE)
    for name in sorted(os.listdir(base)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(base, name), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                match = PYTHON_IMPORT.match(line)
                if not match:
                    continue
                module = match.group(1) or match.group(3)
                if match.group(1) == "feedline":  # from feedline import X
                    module = f"feedline.{match.group(2)}"
                if module.startswith(PYTHON_BASE_MAY_IMPORT):
                    continue
                if (name, module) in PYTHON_BASE_EXCEPTIONS:
                    continue
                problems.append(f"{PYTHON_BASE}/{name}:{number}: feedline.io imports {module}, "
                                "a package built on it")
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    try:
        layers = read_declaration(root)
        for entry in sorted(os.listdir(os.path.join(root, "src"))):
            if os.path.isdir(os.path.join(root, "src", entry)) and entry not in layers:
                raise LayeringError(f"src/{entry} is in no layer (declare it in {DECLARATION})")
        problems, between = problems_of(root, layers)
        problems += doc_problems(root)
        problems += python_problems(root)
    except LayeringError as e:
        print(f"layering check: {e}", file=sys.stderr)
        return 1
    if problems:
        print(f"layering check: the tree breaks the layers declared in {DECLARATION}:",
              file=sys.stderr)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1
    print(f"layering check: {len(layers)} layers ({DECLARATION}), {between} includes between "
          "layers, each of a layer it may use")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
