"""The fenced ```bash and ```python blocks of README.md and docs/*.md, and the ways
`tests/test_docs_blocks.py` runs them as written: a shell line as a command (`.venv/bin/python
-m <module> ...` in this process, as `python -m` runs it; anything else as a subprocess), a page's
Python blocks one after another in one namespace, like a notebook."""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tiny_run import torch_settings_kept

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs")
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
HANG_GUARD = 900
"""Seconds any one command may take before it is taken for hung (they take seconds)."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its page (relative to the repository), first line number, language and
    text."""

    page: str
    line: int
    language: str
    text: str

    @property
    def key(self) -> str:
        """Its first line (a shell block's first command line), without a trailing `\\` or a
        shell comment, spaces collapsed: what the table of `tests/test_docs_blocks.py` names it
        by."""
        lines = [line for line in self.text.splitlines() if line.strip()]
        if self.language == "bash":
            lines = [line.split(" #")[0] for line in lines if not line.lstrip().startswith("#")]
        return " ".join(lines[0].removesuffix("\\").split())

    @property
    def commands(self) -> list[str]:
        """A shell block's commands: continued lines joined, blank and comment lines left out."""
        joined = self.text.replace("\\\n", " ")
        return [line for line in joined.splitlines() if line.strip() and not line.lstrip()
                .startswith("#")]  # fmt: skip


def blocks(root: Path = ROOT) -> list[Block]:
    """Every ```bash and ```python block of README.md and docs/*.md, page by page."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found = []
    for page in pages:
        text = page.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(str(page.relative_to(root)), line, match[1], match[2]))
    return found


@dataclass
class Ran:
    """What a command did: its exit status and its output (stdout and stderr)."""

    status: int
    output: str


def words_of(command: str) -> tuple[dict[str, str], list[str]]:
    """A shell line's leading `NAME=value` settings and its words (quotes removed, a trailing
    comment dropped)."""
    words = shlex.split(command, comments=True)
    settings = {}
    while words and ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        settings[name] = value
    return settings, words


def run_words(words: list[str], cwd: Path, env: dict[str, str]) -> Ran:
    """Run one command's `words` in `cwd` with `env` added to the environment."""
    if words[:2] == [".venv/bin/python", "-m"]:
        return run_module(words[2], words[3:], cwd, env)
    done = subprocess.run(words, cwd=cwd, env=environment(env), capture_output=True, text=True,
                          timeout=HANG_GUARD)  # fmt: skip
    return Ran(done.returncode, done.stdout + done.stderr)


def environment(env: dict[str, str | None]) -> dict[str, str]:
    """This process's environment with `env` added (a None value: the variable unset)."""
    merged = {**os.environ, **env}
    return {name: value for name, value in merged.items() if value is not None}


def run_module(module: str, arguments: list[str], cwd: Path, env: dict[str, str]) -> Ran:
    """`python -m module arguments` in this process (its `__main__`, `sys.argv` as typed), in
    `cwd` with `env` set; its exit status and printed output. What a fit sets for the whole
    process is set back after it (`torch_settings_kept`)."""
    output = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, torch_settings_kept():
        patch.chdir(cwd)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(sys, "argv", [module, *arguments])
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    return Ran(status, output.getvalue())


def run_python(block: Block, namespace: dict, cwd: Path) -> None:
    """Execute a Python block in `namespace` with `cwd` as the working directory."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        exec(compile(block.text, f"{block.page}:{block.line}", "exec"), namespace)


@contextlib.contextmanager
def serving(
    words: list[str], cwd: Path, env: dict[str, str], printed: str
) -> Iterator[tuple[str, str]]:
    """Start the command of `words` in the background until the block ends; once its output
    holds `printed` and the address after it answers: that output and the page's body."""
    with open(cwd / "served.log", "w+") as log:
        server = subprocess.Popen(words, cwd=cwd, env=environment(env), stdout=log,
                                  stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            text, address = wait_for_address(server, log, printed)
            yield text, fetched(address)
        finally:
            server.terminate()
            server.wait(timeout=60)


def wait_for_address(server: subprocess.Popen, log, printed: str) -> tuple[str, str]:
    """The server's output and the address it prints after `printed`, once that answers."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        if printed in text:
            address = text.split(printed, 1)[1].split()[0]
            with contextlib.suppress(OSError):
                fetched(address)
                return text, address
        elif server.poll() is not None:
            raise AssertionError(f"the server stopped (status {server.returncode}): {text}")
        time.sleep(0.5)
    raise AssertionError(f"no {printed!r} in {HANG_GUARD} s")


def fetched(address: str) -> str:
    with urllib.request.urlopen(address, timeout=60) as answer:
        assert answer.status == 200, address
        return answer.read().decode()


def run_shell_block(
    block: Block,
    cwd: Path,
    env: dict[str, str],
    shrink: Callable[[list[str]], list[str]] = list,
) -> list[Ran]:
    """Run each command of a shell block in `cwd`, its words passed through `shrink` (which
    appends the overrides that make it small, or substitutes prepared paths); every command must
    exit 0. What each did."""
    done = []
    for command in block.commands:
        settings, words = words_of(command)
        words = shrink(words)
        ran = run_words(words, cwd, {**env, **settings})
        assert ran.status == 0, f"{block.page}:{block.line}: {shlex.join(words)}\n{ran.output}"
        done.append(ran)
    return done
