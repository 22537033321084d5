"""The `feedline` command: `feedline bench SOURCE`, `tune`, `verify`, `synth`,
`pack` (docs/cli.md).

`pip install` puts it on PATH as the package's entry point `feedline`, and
`python -m feedline` runs it too: the same C++ code as the executable that the
CMake build installs (tools/run_command.h), inside the compiled module.
"""

import signal
import sys

from feedline import _feedline


def main() -> None:
    # As the executable: Ctrl-C ends the command at once (Python would only
    # see it after the C++ run returns), and output into a closed pipe
    # (`feedline bench DIR | head`) ends it quietly.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_feedline._run_command(["feedline", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
