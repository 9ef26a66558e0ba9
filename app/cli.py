"""The `collsim` command line."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading

from simulator.errors import CollsimError
from simulator.fileio import all_or_nothing

from .argv import join_signed_values, unrecognized
from .commands import COMMANDS
from .preflight import output_fields, preflight

DESCRIPTION = """collsim: teach, predict and check collective communication between GPUs.

Every algorithm is written once as a schedule (who sends which chunk to whom, after what).
collsim proves schedules right on numpy buffers (check), draws them (draw, app), prices them
with closed forms (cost) and a discrete-event simulator on real topologies (simulate, sweep),
runs them on real torch.distributed backends (verify, calibrate, compare), and reads real
nccl-tests logs, NCCL's tuning model and MSCCL algorithm files (fit, nccl-model, import-msccl).
It predicts what nccl-tests would print on a machine preset (predict) and what a training step
costs with its collectives overlapped with compute (scenario, run-program, whatif, scale).

Sizes follow nccl-tests: the per-rank buffer for allreduce/broadcast/reduce, the total buffer
for allgather/reduce_scatter/alltoall/gather/scatter. They read 4096, 64KiB, 1MB, 2GiB or 1e6.
Run `collsim COMMAND --help` for each command; every command that prints results takes --json."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="collsim", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    for name, choice in _leaves(sub):
        choice.formatter_class = argparse.RawDescriptionHelpFormatter
        choice.set_defaults(_command=name, _outputs=output_fields(choice))
    return parser


def _leaves(sub: argparse._SubParsersAction, prefix: str = ""):
    """(command name, parser) for every command, nested ones ('topology show') included."""
    for name, choice in sub.choices.items():
        yield prefix + name, choice
        for action in choice._actions:
            if isinstance(action, argparse._SubParsersAction):
                yield from _leaves(action, f"{prefix}{name} ")


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that cleanup runs and no output is written (a BaseException, as
    KeyboardInterrupt is: an `except Exception` on the way, e.g. around a Dask client, must not swallow it)."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = join_signed_values(parser, sys.argv[1:] if argv is None else list(argv))
    args, extras = parser.parse_known_args(argv)
    if extras:
        return _fail(unrecognized(argv, extras, getattr(args, "_command", None)), 2)
    if not hasattr(args, "func"):
        parser.print_help()
        return _fail("give a command; the commands are listed above", 2)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        with all_or_nothing():  # every output file of the run is written at the end, or none
            preflight(args)
            return int(args.func(args) or 0)
    except CollsimError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return _fail("interrupted (SIGINT); no output file written", 130)
    except Terminated:
        return _fail("terminated (SIGTERM); no output file written", 143)
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno not in _NO_ROOM:
            raise
        _drop_stdout()
        return _fail(f"output: cannot write the results: {exc.strerror} ({errno.errorcode[exc.errno]}); "
                     "expected a disk with room for them", 2)
    except MemoryError:
        hint = getattr(args, "_memory_hint", "use smaller --size or --ranks")  # what this command's user can change
        return _fail(f"out of memory: the request is too large for this machine; {hint}", 2)
    except RecursionError:
        return _fail("input nested too deeply to read; expected a flatter file", 2)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the output still buffered is not retried (and reported again) at exit."""
    try:
        if sys.stdout.fileno() == 1:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _fail(message: str, status: int) -> int:
    print(f"collsim: error: {' '.join(message.split())}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
