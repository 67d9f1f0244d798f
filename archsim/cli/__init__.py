"""The ``archsim`` command line.

Each subcommand lives in its own module under ``archsim.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed namespace and returning an exit status. Adding a
subcommand means adding a module and one line to ``_SUBCOMMANDS``.

User errors (:class:`archsim.errors.ArchsimError`) are printed as one line on
stderr with exit status 2, never as a traceback. Ctrl-C and SIGTERM stop any command promptly
with one line (``archsim: interrupted`` / ``archsim: terminated``) and exit status 130 / 143,
after every ``finally`` has run (temporary files removed, sweep workers ended).
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys

from archsim.errors import ArchsimError

# module names under archsim.cli, in the order they appear in --help
_SUBCOMMANDS = ["run", "presets", "workload", "rtl", "sweep", "compare", "validate"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="archsim",
        description="Simulate deep-learning accelerators, generate their RTL, and check one against the other.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMANDS:
        try:
            module = importlib.import_module(f"archsim.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"archsim.cli.{name}":
                continue  # subcommand not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    _accept_stop_signals()
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at exit
        return status
    except ArchsimError as err:
        return _error(str(err))
    except KeyboardInterrupt:
        return _stopped("interrupted", 130)
    except SystemExit as stop:  # raised by the SIGTERM handler (archsim.outputs.install_sigterm_cleanup)
        if stop.code == TERMINATED_STATUS:
            return _stopped("terminated", TERMINATED_STATUS)
        raise
    except BrokenPipeError:  # `archsim presets | head`: the reader left; stop quietly
        _silence_stdout()
        return 141
    except RecursionError:
        return _error("input nested too deeply (recursion limit reached)")
    except MemoryError:
        return _error("out of memory: the run is too large for this machine; try a smaller batch or input size")
    except OSError as err:  # the environment (disk full, permissions), not the user's input format
        from archsim.outputs import os_error_text

        return _error(f"{err.filename or 'I/O'}: {os_error_text(err)}")


TERMINATED_STATUS = 128 + signal.SIGTERM  # 143, as a shell reports a process ended by SIGTERM


def _accept_stop_signals() -> None:
    """Make SIGTERM stop the command promptly: exit 143 through every ``finally`` (temporary files
    and sweep workers go), even when the parent left SIGTERM ignored (``trap '' TERM``, some job
    supervisors) or blocked; a run is then stoppable by anything short of SIGKILL. SIGINT keeps its
    disposition (a shell ignores it for background jobs on purpose) but is unblocked."""
    from archsim.outputs import install_sigterm_cleanup

    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not the main thread, or not POSIX
        pass
    install_sigterm_cleanup()


def _stopped(what: str, status: int) -> int:
    """One line on stderr for a run stopped by Ctrl-C or SIGTERM, and its exit status."""
    try:
        print(f"archsim: {what}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # pragma: no cover - stderr closed
        pass
    return status


def _error(message: str) -> int:
    """Print a user error as one line (control characters and newlines flattened) and return 2."""
    text = " ".join("".join(c if c.isprintable() else " " for c in line).strip() for line in message.splitlines())
    try:
        print(f"archsim: error: {text}", file=sys.stderr)
    except BrokenPipeError:  # pragma: no cover - stderr closed
        pass
    return 2


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout without a descriptor
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
