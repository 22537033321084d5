"""`cmake --install` puts a package that imports and finds libfeedline by
itself (RPATH), away from the build tree."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import feedline

BUILD_DIR = pathlib.Path(feedline.__file__).resolve().parents[2]
CACHE = BUILD_DIR / "CMakeCache.txt"


@pytest.mark.skipif(not CACHE.exists(), reason="feedline is not imported from a build tree")
def test_installed_package_imports_and_loads(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on PATH")
    match = re.search(r"^FEEDLINE_PYTHON_INSTALL_DIR:\w+=(.*)$", CACHE.read_text(), re.M)
    assert match, "the build configures FEEDLINE_PYTHON_INSTALL_DIR"
    destdir = tmp_path / "root"
    env = dict(os.environ, DESTDIR=str(destdir))
    subprocess.run([cmake, "--install", str(BUILD_DIR)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    # Relative to the install prefix by default (python/CMakeLists.txt).
    install_dir = pathlib.Path(match.group(1))
    if not install_dir.is_absolute():
        prefix = re.search(r"^CMAKE_INSTALL_PREFIX:\w+=(.*)$", CACHE.read_text(), re.M)
        assert prefix, "the build configures CMAKE_INSTALL_PREFIX"
        install_dir = pathlib.Path(prefix.group(1)) / install_dir
    site = destdir / str(install_dir).lstrip("/")
    assert (site / "feedline" / "__init__.py").is_file()
    script = (
        "import feedline, numpy as np\n"
        "print(feedline.__file__)\n"
        "data = feedline.io.TensorDataset([np.arange(6)])\n"
        "print([b[0].tolist() for b in feedline.DataLoader(data, batch_size=4)])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert out[0].startswith(str(site))
    assert out[1] == "[[0, 1, 2, 3], [4, 5]]"
