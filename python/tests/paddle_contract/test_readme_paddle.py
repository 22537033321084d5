"""README.md's Paddle swap runs and prints what the README says (the other
examples: ../test_readme.py). Here because it needs the venv's paddle."""

import pathlib
import sys

import pytest

paddle = pytest.importorskip("paddle")  # the venv's paddle (make test-peers)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import readme_blocks  # noqa: E402


def test_readme_paddle_swap(tmp_path):
    (synth,) = [line for line in readme_blocks.feedline_lines() if line.startswith("feedline synth ")]
    readme_blocks.run_feedline(synth, tmp_path)
    (example,) = [(code, expected) for code, expected in readme_blocks.python_examples()
                  if "feedline.paddle" in code]
    readme_blocks.run_example(*example, tmp_path)
