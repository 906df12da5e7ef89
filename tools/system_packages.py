"""Install the programs some tests run (Debian's chromium, ...) when they are missing.

The test command must work on a fresh Debian machine, so tests/conftest.py calls
``ensure`` once per session, before the first test, with the programs the selected tests
need. A program is found on PATH (or at the path an environment variable names); a missing
one is installed with ``apt-get``, as root or through ``sudo -n`` (sudo that needs no
password). Where neither works, or apt fails, ``ensure`` returns one message per program
saying what to run instead. The test workers (pytest-xdist) each call ``ensure``: a file
lock lets one of them install while the others wait and then find the program there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

# apt waits this long for another apt or dpkg (an unattended upgrade, a neighbour's install)
# to release its lock instead of failing at once.
LOCK_TIMEOUT_S = 600
# Held while ``ensure`` looks for missing programs and installs them: one install per machine
# at a time, whichever test session or worker asks.
INSTALL_LOCK = Path(tempfile.gettempdir()) / "lattn-edu-system-packages.lock"


@dataclass(frozen=True)
class Program:
    """A program some tests run, and where it comes from.

    ``command`` is looked up on PATH; ``packages`` are the Debian packages that bring it;
    where ``env`` is set in the environment, its value is the program's path and nothing is
    installed (for machines without apt, or for another build of the program).
    """

    command: str
    packages: tuple[str, ...]
    env: str | None = None


@dataclass
class System:
    """What ``ensure`` asks of the machine; tests replace these to fake apt and sudo."""

    which: Callable[[str], str | None] = shutil.which
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run
    euid: Callable[[], int] = getattr(os, "geteuid", lambda: -1)  # -1: not root (no geteuid on Windows)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    say: Callable[[str], None] = print
    lock: Path = INSTALL_LOCK


def find(program: Program, system: System) -> str | None:
    """The program's path, from its environment variable or PATH; None where it is missing."""
    if program.env and system.environ.get(program.env):
        return system.environ[program.env]
    return system.which(program.command)


def root_prefix(system: System) -> list[str] | None:
    """[] as root, ["sudo", "-n"] where sudo works without a password, else None."""
    if system.euid() == 0:
        return []
    if system.which("sudo") is None:
        return None
    probe = system.run(["sudo", "-n", "true"], capture_output=True, text=True)
    return ["sudo", "-n"] if probe.returncode == 0 else None


def apt_commands(packages: Sequence[str], prefix: Sequence[str]) -> list[list[str]]:
    """apt-get update, then a non-interactive install of ``packages``, each run with ``prefix``."""
    apt = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
           "-o", f"DPkg::Lock::Timeout={LOCK_TIMEOUT_S}"]
    return [apt + ["update"], apt + ["install", "-y", *packages]]


def advice(programs: Sequence[Program]) -> str:
    """What a person should run to get ``programs``, for the message when installing failed."""
    packages = " ".join(p for program in programs for p in program.packages)
    overrides = [f"{p.env}=/path/to/{p.command}" for p in programs if p.env]
    text = (f"With apt (Debian), run: sudo apt-get update && sudo apt-get install -y {packages} "
            f"and run the tests again.")
    if overrides:
        text += f" Elsewhere, install {', '.join(p.command for p in programs)} and set {' '.join(overrides)}."
    return text


def install(programs: Sequence[Program], system: System) -> str | None:
    """Install the packages of ``programs`` with apt-get; None on success, else why not."""
    if system.which("apt-get") is None:
        return "this machine has no apt-get"
    prefix = root_prefix(system)
    if prefix is None:
        return "installing needs root, and sudo is missing or asks for a password"
    packages = [package for program in programs for package in program.packages]
    system.say(f"installing {' '.join(packages)} with apt-get ({'with sudo' if prefix else 'as root'})")
    for command in apt_commands(packages, prefix):
        result = system.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            said = " / ".join((result.stderr or result.stdout or "").strip().splitlines()[-3:])
            return f"`{' '.join(command)}` failed (exit {result.returncode}): {said}"
    return None


def ensure(programs: Iterable[Program], system: System | None = None) -> dict[str, str]:
    """Install the missing ``programs``; returns {command: message} for each one still missing.

    Nothing runs when every program is present. A path named by a program's environment
    variable must be an executable file: it is reported, never replaced by an install.
    """
    system = system or System()
    programs = list(dict.fromkeys(programs))
    problems = {p.command: f"{p.env}={find(p, system)} is not an executable file; point it at "
                           f"{p.command}, or unset it to use Debian's {p.command}."
                for p in programs if p.env and system.environ.get(p.env)
                and not os.access(system.environ[p.env], os.X_OK)}
    if all(find(p, system) is not None for p in programs):
        return problems
    # mode 0o666: a later session of another user opens the same lock file
    with FileLock(system.lock, mode=0o666):
        missing = [p for p in programs if find(p, system) is None]  # again: a neighbour may have installed them
        if not missing:
            return problems
        reason = install(missing, system)
    still = [p for p in missing if find(p, system) is None]
    if still:
        names = ", ".join(p.command for p in still)
        reason = reason or f"apt-get finished, yet {names} is not on PATH"
        message = f"{names} not found, and not installed: {reason}. {advice(still)}"
        problems.update({p.command: message for p in still})
    return problems
