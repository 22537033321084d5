"""README.md's code blocks, for the tests that keep it true (test_readme.py,
paddle_contract/test_readme_paddle.py)."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

from time_bounds import bound_time

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"

# A fenced block: its language and its text.
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
# A Python block and the output the README says it prints.
PYTHON_EXAMPLE = re.compile(r"^```python\n(.*?)^```\n+It prints `([^`]*)`", re.M | re.S)


def text():
    return README.read_text()


def blocks(language):
    """The text of every block in `language`, in order."""
    return [body for lang, body in BLOCK.findall(text()) if lang == language]


def python_examples():
    """(code, expected output) of every Python block."""
    examples = PYTHON_EXAMPLE.findall(text())
    assert len(examples) == len(blocks("python")), (
        "every Python block in README.md is followed by 'It prints `...`'")
    return examples


def shell_lines():
    """Every command line of the sh blocks, without its comment."""
    lines = []
    for body in blocks("sh"):
        for line in body.splitlines():
            command = line.split(" #")[0].strip()
            if command:
                lines.append(command)
    return lines


def feedline_lines():
    return [line for line in shell_lines() if line.startswith("feedline ")]


def run_feedline(line, cwd):
    """Runs a README `feedline ...` line as `python -m feedline ...` (what the
    entry point runs) in `cwd`; returns its stdout."""
    args = shlex.split(line)
    bound_time(330)  # past the child's timeout: a hung child fails its test
    result = subprocess.run([sys.executable, "-m", "feedline", *args[1:]], cwd=cwd,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README's `{line}`: exit {result.returncode}: {result.stderr}"
    return result.stdout


def run_example(code, expected, cwd):
    """Runs a README Python block in a fresh interpreter in `cwd` and checks
    that its output is what the README says."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    bound_time(330)  # past the child's timeout: a hung child fails its test
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README's example failed:\n{code}\n{result.stderr}"
    assert result.stdout.strip() == expected, (
        f"README says the example prints `{expected}`; it printed `{result.stdout.strip()}`")
