#!/usr/bin/env python3
"""Checks that no class of the library's sources has more than 20 public functions.

A class whose public interface outgrows what a reader holds in their head is
split into parts with one job each (src/loader/README.md, "The engine": the
Scheduler is a facade over EpochCursor, RowClaims, WorkerRoster and
ConsumerSignal). Counted per class or struct of every header under src/: the
declarations and definitions of functions in its public section (each
overload, constructors and operators included; destructors and deleted
functions not; nested classes are counted on their own). Fails (exit status 1), naming the class, its header and the
count, past the limit.

Run from anywhere: `python3 scripts/check_class_size.py [repository root]`.
"""

import os
import re
import sys

LIMIT = 20


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def class_bodies(text):
    """(kind, name, body) of each class or struct defined in `text`, nested ones too."""
    for match in re.finditer(r"\b(class|struct)\s+(?:\w+\s+)*?(\w+)(?:\s+final)?\s*(?::[^{;]*)?\{",
                             text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        yield match.group(1), match.group(2), text[match.end():end - 1]


def public_functions(kind, body):
    """Function declarations and definitions at the top level of `body`'s public sections."""
    access = "public" if kind == "struct" else "private"
    count, depth, statement, i = 0, 0, "", 0
    while i < len(body):
        if depth == 0 and not statement.strip():
            label = re.match(r"\s*(public|private|protected)\s*:(?!:)", body[i:])
            if label:
                access = label.group(1)
                i += label.end()
                continue
        char = body[i]
        if char == "{":
            if depth == 0:
                head = statement
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:  # the end of a function body, or of a nested type
                if access == "public" and is_function(head):
                    count += 1
                statement = ""
                i += 1
                if i < len(body) and body[i] == ";":
                    i += 1
                continue
        elif char == ";" and depth == 0:
            if access == "public" and is_function(statement):
                count += 1
            statement = ""
            i += 1
            continue
        if depth == 0:
            statement += char
        i += 1
    return count


def is_function(statement):
    """A function (not a deleted one, a destructor or a data member) declared by `statement`."""
    statement = " ".join(statement.split())
    if "(" not in statement:
        return False
    if re.match(r"(using|friend|static_assert|enum|typedef|class|struct|union)\b", statement):
        return False
    if re.search(r"=\s*delete$", statement):
        return False
    before = statement[:statement.index("(")].strip()
    # A data member: `int x_ = f();`, `Mutex mu_ GUARDED_BY(x)`, `T t_{f()}`.
    if "=" in before.replace("operator=", "").replace("operator==", "") or "{" in before:
        return False
    name = re.split(r"[\s\*&:]", before)[-1]
    return name not in ("GUARDED_BY", "PT_GUARDED_BY", "ACQUIRED_AFTER", "ACQUIRED_BEFORE") \
        and not name.startswith("~")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    too_large = []
    checked = 0
    for directory, _, files in os.walk(os.path.join(root, "src")):
        for name in sorted(files):
            if not name.endswith(".h"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as f:
                text = strip_comments(f.read())
            for kind, cls, body in class_bodies(text):
                checked += 1
                n = public_functions(kind, body)
                if n > LIMIT:
                    too_large.append(f"{os.path.relpath(path, root)}: {cls} has {n} public "
                                     f"functions (at most {LIMIT})")
    for line in too_large:
        print("class size check: " + line, file=sys.stderr)
    if too_large:
        return 1
    print(f"class size check: {checked} classes in src/, none with more than {LIMIT} public "
          "functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
