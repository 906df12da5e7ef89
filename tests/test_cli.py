"""Tests for lattn_edu.cli: dispatch to subcommands, and the fresh process bench's timings need."""

from __future__ import annotations

import os
import sys

import pytest

from lattn_edu import cli


class Exec(Exception):
    """Raised by the stand-in for os.execve, carrying what it was asked to run."""


def fake_execve(path, args, env):
    raise Exec(path, args, env)


@pytest.fixture
def command_line(monkeypatch):
    monkeypatch.setattr(cli.os, "execve", fake_execve)
    for name in cli.BENCH_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)

    def set_argv(*words):
        monkeypatch.setattr(sys, "argv", ["lattn-edu", *words])
    return set_argv


def test_bench_from_the_command_line_restarts_with_the_benchmark_environment(command_line, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # a reader's own choice
    command_line("bench", "--quick")
    with pytest.raises(Exec) as raised:
        cli.main()
    path, args, env = raised.value.args
    assert path == sys.executable and args[1:] == ["-m", "lattn_edu.cli", "bench", "--quick"]
    assert env["OPENBLAS_THREAD_TIMEOUT"] == "4" and env["OMP_WAIT_POLICY"] == "ACTIVE"
    assert env["PATH"] == os.environ["PATH"]


def test_no_restart_once_the_environment_is_set_or_for_other_commands(command_line, monkeypatch):
    command_line("recall", "--help")
    with pytest.raises(SystemExit):  # argparse's --help, in this process
        cli.main()
    for name, value in cli.BENCH_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    command_line("bench", "--sizes", "0")
    assert cli.main() == 2  # ran here: the bad size is refused without a restart


def test_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit):
        cli.main(["nonsense"])
    assert "invalid choice" in capsys.readouterr().err
