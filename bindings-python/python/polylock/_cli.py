"""The ``polylock`` console command of the Python package: the same command as the Rust binary
(``polylock run``, ``status``, ``unlock``), run by the native module, so a ``pip install`` gives
shells the command with no Rust toolchain."""

from __future__ import annotations

import signal
import sys

from . import _native


def main() -> None:
    # The command forwards SIGINT and SIGTERM to the child it runs: give the signals back to their
    # default disposition so its own handlers take them (and children start with the defaults).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    sys.stdout.flush()
    code = _native.run_cli(["polylock", *sys.argv[1:]])
    sys.exit(code)


if __name__ == "__main__":
    main()
