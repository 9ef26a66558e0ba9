"""The command line before and after argparse: values that start with '-', and words argparse did not take.

argparse reads `--alpha -2us` as an option `-2us` with no value ("expected one argument"), so the value never
reaches the parser that would say what is wrong with it; `join_signed_values` rewrites it as `--alpha=-2us`.
argparse answers a word it did not take (`--size 1 MiB`: 'MiB') with the top-level usage; `unrecognized` says
instead which option the word belongs to, or which command did not take it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from simulator.units import unit_kind

SIGNED = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)  # a negative or signed number, not an option
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$", re.IGNORECASE)
EXAMPLES = {"size": "1MiB", "time": "2us", "bandwidth": "25GB/s"}


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """`parser` and every subcommand's parser, nested ones included."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action.choices.values():
                yield from parsers(choice)


def value_options(parser: argparse.ArgumentParser) -> tuple[set[str], set[str]]:
    """(long options that take one value in every command that has them, every option string)."""
    takes, flags, known = set(), set(), set()
    for each in parsers(parser):
        for action in each._actions:
            known.update(action.option_strings)
            long = {s for s in action.option_strings if s.startswith("--")}
            (takes if action.nargs is None else flags).update(long)
    return takes - flags, known


def join_signed_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """argv with `--OPTION -VALUE` joined into `--OPTION=-VALUE` where OPTION takes one value and -VALUE is a
    signed number (-2us, -1e-11, -inf), so that the option's own parser reads it and says what it accepts."""
    takes, known = value_options(parser)
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return out + argv[i:]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if word in takes and following is not None and SIGNED.match(following) and following not in known:
            out.append(f"{word}={following}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def unrecognized(argv: list[str], extras: list[str], command: str | None) -> str:
    """The one-line error for words argparse did not take: a unit typed apart from its number (`--size 1 MiB`)
    names the option and how to write it, anything else names the command that did not take it."""
    for j, word in enumerate(argv):
        kind = unit_kind(word) if word in extras else None
        given = _option_value(argv, j) if kind else None
        if given is not None:
            option, number = given
            return (f"{option}: '{number} {word}' has a space between the number and its unit; "
                    f"write {kind}s without spaces, such as {EXAMPLES[kind]}")
    where = f"collsim {command}" if command else "collsim"
    return f"{command or 'command'}: unrecognized arguments: {' '.join(extras)}; expected what `{where} --help` lists"


def _option_value(argv: list[str], j: int) -> tuple[str, str] | None:
    """(option name, number) when the words before argv[j] are `--OPTION NUMBER` or `--OPTION=NUMBER`."""
    before = argv[j - 1] if j >= 1 else ""
    if before.startswith("--") and "=" in before:
        option, number = before.split("=", 1)
    elif j >= 2 and argv[j - 2].startswith("--"):
        option, number = argv[j - 2], before
    else:
        return None
    return (option.lstrip("-"), number) if NUMBER.match(number) else None
