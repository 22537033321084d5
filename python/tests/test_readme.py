"""README.md stays true. Its Python examples run and print what it says they
print; its `feedline` commands run (as `python -m feedline`, which the
entry point that `pip install` puts on PATH runs); its C++ and CMake are
those of examples/cmake_consumer, which make test-install builds; every other
shell command it shows is one that make test runs, named here with where.
The Paddle example needs the venv's paddle: paddle_contract/test_readme_paddle.py."""

import pathlib

import pytest

import readme_blocks
from seaweedfs_server import SeaweedFs

ROOT = readme_blocks.README.parent

# README's other shell commands: the file that runs each in make test (or
# make demo), and a line of it that shows so.
RUN_ELSEWHERE = {
    "make demo": ("Makefile", "demo: deps"),
    "make test": (".ci/run", "make test"),
    "bash scripts/install_deps.sh": ("Makefile", "@bash scripts/install_deps.sh"),
    "pip install .": ("scripts/check_wheel.sh", 'pip_build "${pip_install[@]}"'),
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2":
        ("Makefile", "cmake -S . -B $(BUILD) $(CMAKE_FLAGS)"),
    "cmake --install build --prefix /opt/feedline":
        ("Makefile", "@cmake --install $(BUILD) --prefix $(BUILD)/install-check/prefix"),
}


def test_readme_reads_in_five_minutes():
    assert len(readme_blocks.text().splitlines()) <= 250


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding README's `data` image folder, written by its own
    `feedline synth` line."""
    cwd = tmp_path_factory.mktemp("readme")
    synth = [line for line in readme_blocks.feedline_lines() if line.startswith("feedline synth ")]
    assert len(synth) == 1, synth
    readme_blocks.run_feedline(synth[0], cwd)
    assert len(list((cwd / "data").glob("*/*.jpg"))) == 256
    return cwd


@pytest.fixture()
def s3(tmp_path, monkeypatch):
    """README's s3://bucket/: a real S3 endpoint (SeaweedFS on loopback) that
    the AWS variables name, as a user's would."""
    server = SeaweedFs(tmp_path, "bucket")
    try:
        server.start()
        server.point_aws_at_it(monkeypatch)
        yield server
    finally:
        server.stop()


def test_feedline_commands_run(workdir, s3):
    outputs = {}
    for line in readme_blocks.feedline_lines():
        if not line.startswith("feedline synth "):
            outputs[line.split("#")[0].strip()] = readme_blocks.run_feedline(line, workdir)
    assert {line.split()[1] for line in outputs} == {"bench", "tune", "verify", "pack"}, outputs
    bench = next(out for line, out in outputs.items() if line.startswith("feedline bench "))
    assert "throughput" in bench and "images/s" in bench, bench
    tune = next(out for line, out in outputs.items() if line.startswith("feedline tune "))
    assert "recommended: --workers" in tune, tune
    assert (workdir / "tune.svg").read_text().startswith("<")
    packs = {line: out for line, out in outputs.items() if line.startswith("feedline pack ")}
    assert set(packs) == {"feedline pack data shards", "feedline pack data s3://bucket/train/"}
    for line, out in packs.items():
        assert "256 images" in out, (line, out)
    assert (workdir / "shards" / "pack.txt").is_file()
    # The pack in the bucket is whole: a reader takes it, every record of it.
    from feedline.vision import datasets
    assert len(datasets.ShardDataset("s3://bucket/train/")) == 256


# The native example and the torch swap (Debian's torch and torchvision).
EXAMPLES = [(code, expected) for code, expected in readme_blocks.python_examples()
            if "feedline.paddle" not in code]


def test_the_examples_are_found():
    assert len(EXAMPLES) == 2 and len(readme_blocks.python_examples()) == 3


@pytest.mark.parametrize("code, expected", EXAMPLES, ids=["native", "torch swap"])
def test_python_example(workdir, code, expected):
    readme_blocks.run_example(code, expected, workdir)


def test_other_shell_commands_run_in_make_test():
    for line in readme_blocks.shell_lines():
        if line.startswith("feedline "):
            continue
        assert line in RUN_ELSEWHERE, f"README shows `{line}`: no test runs it"
        path, evidence = RUN_ELSEWHERE[line]
        assert evidence in (ROOT / path).read_text(), f"{path} no longer runs README's `{line}`"


def lines_in_order(excerpt, source):
    """Whether every line of `excerpt` but its `// ...` elisions is a line of
    `source`, in the same order."""
    wanted = [line.strip() for line in excerpt.splitlines()
              if line.strip() and not line.strip().startswith("// ...")]
    have = iter(line.strip() for line in source.splitlines())
    missing = [line for line in wanted if not any(line == h for h in have)]
    return missing


def test_cpp_example_is_the_consumer_that_make_test_install_builds():
    consumer = ROOT / "examples" / "cmake_consumer"
    (cpp,) = readme_blocks.blocks("cpp")
    assert lines_in_order(cpp, (consumer / "main.cc").read_text()) == []
    (cmake,) = readme_blocks.blocks("cmake")
    cmake_lines = pathlib.Path(consumer / "CMakeLists.txt").read_text().splitlines()
    for line in cmake.splitlines():
        assert line.split("#")[0].strip() in cmake_lines, line
