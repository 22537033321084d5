#!/usr/bin/env python3
"""Checks that the include graph of the library follows its layers.

The library's directories are layered: each may include its own headers and
those of the layers below it, never one above, so that any layer builds and
can be understood with only the layers beneath it. The order (lowest first):

    src/core            Tensor, Sample, SampleContext, Rng, errors, locks
    src/data            datasets, samplers, batch samplers
    src/loader          the engine: scheduling, slots, error policy, collate
    src/process         worker processes, behind the engine's interfaces
    src/loader_factory  the public DataLoader and the factory that picks its
                        engine (threads or processes): the one place that
                        knows both src/loader and src/process
    src/vision          decoders, transforms, image datasets
    src/storage         shards and HDF5, which read images through src/vision
    src/text            token documents, packing and mixing (needs src/data)
    src/synth           synthetic data for tests, benchmarks and the command:
                        not installed, so no part of the library includes it
    python, tools       the Python module and the `feedline` command

Two directories in the same layer may not include each other. Every
`#include "src/..."` and `#include "feedline/..."` of src/, include/,
python/ and tools/ is an edge. A public header (include/feedline/...) belongs
to the layer that implements it: vision/ and storage/ to theirs, any other to
the directory whose .cc has its name (feedline/batch.h: src/loader/batch.cc),
or else to the layer PUBLIC_HEADERS_WITHOUT_SOURCE names.

Fails (exit status 1), naming each file and include, on a cycle between the
directories of src/ and on an edge that points up (or sideways). Run from
anywhere: `python3 scripts/check_layering.py [repository root]`.
"""

import os
import re
import sys

# Lowest first; directories in one tuple share a layer.
LAYERS = (
    ("src/core",),
    ("src/data",),
    ("src/loader",),
    ("src/process",),
    ("src/loader_factory",),
    ("src/vision",),
    ("src/storage",),
    ("src/text",),
    ("src/synth",),
    ("python", "tools"),
)

# Public headers that no .cc of the same name implements.
PUBLIC_HEADERS_WITHOUT_SOURCE = {
    "export.h": "src/core",
    "sampler.h": "src/data",
    "batch_sampler.h": "src/data",
    "iterable_dataset.h": "src/data",
    "next_status.h": "src/loader",
    # The umbrella header includes every top-level public header.
    "feedline.h": "src/loader_factory",
}

# The public headers' subdirectories and the layer each belongs to.
PUBLIC_SUBDIRECTORIES = {"vision": "src/vision", "storage": "src/storage", "text": "src/text"}

RANK = {directory: rank for rank, layer in enumerate(LAYERS) for directory in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s*["<]((?:src|feedline)/[^">]+)[">]')


class LayeringError(Exception):
    pass


def source_files(root):
    """The files whose includes are edges, as paths relative to `root`."""
    for top in ("src", "include", "tools"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cc")):
                    yield os.path.relpath(os.path.join(folder, name), root)
    python = os.path.join(root, "python")
    for name in sorted(os.listdir(python)):
        if name.endswith((".h", ".cc")):
            yield os.path.join("python", name)


def stems_of_sources(root):
    """Maps a .cc's name without extension to the src/ directories holding one."""
    stems = {}
    for directory in RANK:
        folder = os.path.join(root, directory)
        if not directory.startswith("src/") or not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name.endswith(".cc"):
                stems.setdefault(name[: -len(".cc")], []).append(directory)
    return stems


def layer_of_public_header(path, stems):
    """The layer of `feedline/...`, a path under include/."""
    parts = path.split("/")
    if len(parts) == 3 and parts[1] in PUBLIC_SUBDIRECTORIES:
        return PUBLIC_SUBDIRECTORIES[parts[1]]
    if len(parts) != 2:
        raise LayeringError(f"{path}: no layer for this public header's directory")
    name = parts[1]
    if name in PUBLIC_HEADERS_WITHOUT_SOURCE:
        return PUBLIC_HEADERS_WITHOUT_SOURCE[name]
    directories = stems.get(name[: -len(".h")], [])
    if len(directories) != 1:
        raise LayeringError(
            f"{path}: implemented in {len(directories)} directories of src/ "
            f"({', '.join(sorted(directories)) or 'none'}); name its layer in "
            "PUBLIC_HEADERS_WITHOUT_SOURCE (scripts/check_layering.py)")
    return directories[0]


def layer_of_path(path, stems):
    """The layer of a file or include target: src/<dir>/..., feedline/..., include/feedline/..."""
    if path.startswith("include/"):
        path = path[len("include/"):]
    if path.startswith("feedline/"):
        return layer_of_public_header(path, stems)
    parts = path.split("/")
    directory = "/".join(parts[:2]) if parts[0] == "src" else parts[0]
    if directory not in RANK:
        raise LayeringError(f"{path}: {directory} is in no layer (LAYERS, scripts/check_layering.py)")
    return directory


def edges_of(root):
    """(from layer, to layer, file, line number, included path) for every include between layers."""
    stems = stems_of_sources(root)
    edges = []
    for path in source_files(root):
        source = layer_of_path(path, stems)
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = layer_of_path(match.group(1), stems)
                if target != source:
                    edges.append((source, target, path, number, match.group(1)))
    return edges


def graph_of(edges):
    """The src/ directories and which others each includes."""
    graph = {}
    for source, target, *_ in edges:
        if source.startswith("src/") and target.startswith("src/"):
            graph.setdefault(source, set()).add(target)
            graph.setdefault(target, set())
    return graph


def cycles_of(graph):
    """One shortest cycle through each strongly connected component of `graph`
    with more than one member, as the list of its directories."""
    # Tarjan's algorithm; the graph has a handful of nodes.
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [shortest_cycle(graph, component) for component in components]


def shortest_cycle(graph, component):
    """A shortest path from the component's first directory back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    return paths[node]
                if nxt not in paths:
                    paths[nxt] = paths[node] + [nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError("a strongly connected component without a cycle")


def problems_of(edges):
    problems = []
    shown_per_step = 3
    for cycle in cycles_of(graph_of(edges)):
        problems.append("cycle: " + " -> ".join(cycle + cycle[:1]))
        for source, target in zip(cycle, cycle[1:] + cycle[:1]):
            step = [e for e in edges if e[0] == source and e[1] == target]
            for _, _, path, number, included in step[:shown_per_step]:
                problems.append(f"  {path}:{number}: includes \"{included}\" ({source} -> {target})")
            if len(step) > shown_per_step:
                problems.append(f"  and {len(step) - shown_per_step} more includes of {target} in {source}")
    for source, target, path, number, included in edges:
        if RANK[target] > RANK[source]:
            problems.append(f"{path}:{number}: includes \"{included}\": {source} may not "
                            f"include {target}, a layer above it")
        elif RANK[target] == RANK[source]:
            problems.append(f"{path}:{number}: includes \"{included}\": {source} and {target} "
                            "share a layer and may not include each other")
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    try:
        edges = edges_of(root)
    except LayeringError as e:
        print(f"layering check: {e}", file=sys.stderr)
        return 1
    problems = problems_of(edges)
    if problems:
        print("layering check: the includes break the layers "
              "(the order is in scripts/check_layering.py and docs/architecture.md):",
              file=sys.stderr)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1
    pairs = {(source, target) for source, target, *_ in edges}
    print(f"layering check: {len(edges)} includes between {len(pairs)} pairs of layers, "
          "no cycle, none upward")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
