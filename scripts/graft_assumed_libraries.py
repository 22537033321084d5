#!/usr/bin/env python3
"""Adds to a repaired wheel the libraries that the manylinux policy assumes
every system has but a minimal one lacks, and that its vendored libraries
need.

    graft_assumed_libraries.py WHEEL PATCHELF

`auditwheel repair` copies a wheel's libraries into PACKAGE.libs/, except
those the manylinux policy lists as provided by the system (PEP 600: glibc,
libstdc++, libgcc_s, and a few more, among them libX11). Debian 12's
OpenCV core links libGLX (OpenGL interop), which needs libX11: the wheel
would not load on a system without X11, such as a container or a minimal
Debian. This copies each such library (and the libraries it needs in turn,
found with ldd on this machine) into the .libs folder, sets their RPATH, and
that of the vendored library that needs them, to $ORIGIN, and rewrites the
wheel's RECORD. glibc's own libraries, libstdc++ and libgcc_s stay the
system's: the policy's glibc version is what the wheel's tag states.
"""

import base64
import csv
import hashlib
import io
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

# Libraries every glibc system has, of the glibc version the tag names, and
# the C++ runtime the policy's tag allows: never copied.
SYSTEM = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libcrypt|libnsl|"
                    r"ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so")


def needed(path):
    """The NEEDED entries of the ELF file at `path`."""
    out = subprocess.run(["readelf", "-d", str(path)], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def system_path(name, of):
    """Where this machine's loader finds library `name` for `of`."""
    out = subprocess.run(["ldd", str(of)], check=True, capture_output=True, text=True).stdout
    match = re.search(r"^\s*" + re.escape(name) + r" => (\S+)", out, re.M)
    if not match or match.group(1) == "not":
        sys.exit(f"graft: {of} needs {name}, which this machine does not have either")
    return pathlib.Path(match.group(1))


def main():
    wheel, patchelf = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(root)
        libs = next(root.glob("*.libs"))
        present = {p.name for p in libs.iterdir()}
        # A vendored library's NEEDED entry that is neither vendored nor glibc's.
        grafted = []
        pending = []
        for lib in sorted(libs.iterdir()):
            missing = [n for n in needed(lib) if n not in present and not SYSTEM.match(n)]
            if missing:
                pending += [(n, lib) for n in missing]
                subprocess.run([patchelf, "--set-rpath", "$ORIGIN", str(lib)], check=True)
        while pending:
            name, of = pending.pop()
            if name in present:
                continue
            source = system_path(name, of)
            target = libs / name
            shutil.copy2(source.resolve(), target)
            os.chmod(target, 0o755)
            subprocess.run([patchelf, "--set-rpath", "$ORIGIN", str(target)], check=True)
            present.add(name)
            grafted.append(name)
            pending += [(n, source) for n in needed(target)
                        if n not in present and not SYSTEM.match(n)]
        if not grafted:
            print("graft: nothing to add")
            return
        # The RECORD: every file with its sha256 and size, itself last.
        record = next(root.glob("*.dist-info/RECORD"))
        rows = []
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p != record):
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append([path.relative_to(root).as_posix(), f"sha256={digest}", str(len(data))])
        rows.append([record.relative_to(root).as_posix(), "", ""])
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        record.write_text(text.getvalue())
        rebuilt = wheel.with_suffix(".tmp")
        with zipfile.ZipFile(rebuilt, "w", zipfile.ZIP_DEFLATED) as z:
            # dist-info last, as wheels are written.
            files = sorted((p for p in root.rglob("*") if p.is_file()),
                           key=lambda p: (".dist-info/" in p.as_posix(), p.as_posix()))
            for path in files:
                z.write(path, path.relative_to(root).as_posix())
        rebuilt.replace(wheel)
        print(f"graft: added {', '.join(sorted(grafted))} to {libs.name}/")


if __name__ == "__main__":
    main()
