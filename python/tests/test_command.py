"""The `feedline` command run through the package (`python -m feedline`, what
the entry point `feedline` that pip installs runs): the C++ command inside
the module, with the executable's exit codes, messages and signals."""

import json
import signal
import subprocess
import sys
import time

import feedline
from feedline.vision import synth

from time_bounds import bound_time


def command(*args, **kwargs):
    bound_time(150)  # past the child's timeout: a hung child fails its test
    return subprocess.run([sys.executable, "-m", "feedline", *args], capture_output=True,
                          text=True, timeout=120, **kwargs)


def test_version_is_the_package_version():
    result = command("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"feedline {feedline.__version__}"


def test_bad_usage_exits_2_naming_what_is_wrong(tmp_path):
    missing = tmp_path / "no-such-folder"
    result = command("bench", str(missing))
    assert result.returncode == 2
    assert f"SOURCE '{missing}' does not exist" in result.stderr, result.stderr
    result = command("frob")
    assert result.returncode == 2
    assert "unknown command 'frob'" in result.stderr, result.stderr


def test_report_on_stdout(tmp_path):
    assert synth.write_image_folder(str(tmp_path), 16, classes=2, seed=3) == []
    result = command("bench", str(tmp_path), "--batch", "8", "--workers", "1", "--size", "32",
                     "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    # The C++ output reaches the pipe whole, the JSON object last.
    report = json.loads(result.stdout.splitlines()[-1])
    assert (report["command"], report["batch"], report["batches"]) == ("bench", 8, 2), report
    assert report["broken_samples"] == 0, report


def test_ctrl_c_ends_the_command_at_once(tmp_path):
    # The C++ run holds no GIL and never returns to Python: without the
    # default SIGINT action Ctrl-C would wait for the whole run.
    assert synth.write_image_folder(str(tmp_path), 16, classes=2, seed=4) == []
    process = subprocess.Popen([sys.executable, "-m", "feedline", "bench", str(tmp_path),
                                "--batch", "8", "--workers", "1", "--size", "32",
                                "--epochs", "100000", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        assert process.poll() is None, "the run ended before Ctrl-C"
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == -signal.SIGINT
        assert time.monotonic() - sent < 5
    finally:
        process.kill()
        process.wait()
