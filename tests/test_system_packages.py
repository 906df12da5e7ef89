"""tools/system_packages.py installs the programs tests run, with apt, as root or with sudo,
only when they are missing; and conftest.py asks for them only when a selected test needs them.
apt-get and sudo are faked here: nothing is installed."""

from __future__ import annotations

import subprocess
import threading
from types import SimpleNamespace

import pytest
from filelock import FileLock

import conftest
import system_packages
from system_packages import Program

CHROMIUM = Program("chromium", ("chromium", "chromium-driver"), env="LATTN_CHROMIUM")
PDFTOPPM = Program("pdftoppm", ("poppler-utils",))


class FakeMachine:
    """A Debian machine whose apt-get 'installs' a package by putting its program on PATH."""

    def __init__(self, on_path=(), euid=0, sudo=None, fail=None, apt=True, installs=True, environ=None,
                 lock=system_packages.INSTALL_LOCK):
        self.on_path = {name: f"/usr/bin/{name}" for name in on_path}
        if apt:
            self.on_path["apt-get"] = "/usr/bin/apt-get"
        if sudo is not None:
            self.on_path["sudo"] = "/usr/bin/sudo"
        self.sudo_without_password = sudo == "no password"
        self.fail = fail  # the apt-get subcommand that fails: "update" or "install"
        self.installs = installs
        self.commands: list[list[str]] = []
        self.said: list[str] = []
        self.system = system_packages.System(which=self.on_path.get, run=self.run, euid=lambda: euid,
                                             environ=environ or {}, say=self.said.append, lock=lock)

    def run(self, command, **options):
        self.commands.append(list(command))
        if command[:2] == ["sudo", "-n"] and command[2:] == ["true"]:
            return subprocess.CompletedProcess(command, 0 if self.sudo_without_password else 1, "",
                                               "" if self.sudo_without_password else "sudo: a password is required")
        subcommand = command[-1] if command[-1] == "update" else "install"
        if subcommand == self.fail:
            return subprocess.CompletedProcess(command, 100, "", "E: Unable to locate package chromium")
        if subcommand == "install" and self.installs:
            programs = {"chromium": "chromium", "poppler-utils": "pdftoppm"}
            for package in command[command.index("-y") + 1:]:
                if package in programs:
                    self.on_path[programs[package]] = f"/usr/bin/{programs[package]}"
        return subprocess.CompletedProcess(command, 0, "", "")

    def apt_commands(self):
        return [c for c in self.commands if "apt-get" in c]


def test_nothing_runs_when_the_programs_are_present():
    machine = FakeMachine(on_path=["chromium", "pdftoppm"], sudo="no password")
    assert system_packages.ensure([CHROMIUM, PDFTOPPM], machine.system) == {}
    assert machine.commands == [] and machine.said == []


def test_nothing_runs_when_no_program_is_asked_for():
    machine = FakeMachine()
    assert system_packages.ensure([], machine.system) == {}
    assert machine.commands == []


def test_root_updates_and_installs_noninteractively():
    machine = FakeMachine(euid=0)
    assert system_packages.ensure([CHROMIUM], machine.system) == {}
    update, install = machine.commands
    assert update[:3] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"] and update[-1] == "update"
    assert install[:3] == update[:3] and install[-4:] == ["install", "-y", "chromium", "chromium-driver"]
    assert "sudo" not in update + install
    assert machine.said == ["installing chromium chromium-driver with apt-get (as root)"]


def test_a_user_with_passwordless_sudo_installs_with_sudo():
    machine = FakeMachine(euid=1000, sudo="no password")
    assert system_packages.ensure([CHROMIUM], machine.system) == {}
    probe, update, install = machine.commands
    assert probe == ["sudo", "-n", "true"]
    assert update[:2] == install[:2] == ["sudo", "-n"] and install[-2:] == ["chromium", "chromium-driver"]


def test_only_the_missing_programs_are_installed_in_one_apt_call():
    machine = FakeMachine(on_path=["chromium"], euid=0)
    assert system_packages.ensure([CHROMIUM, PDFTOPPM, PDFTOPPM], machine.system) == {}
    (install,) = [c for c in machine.apt_commands() if "install" in c]
    assert install[install.index("-y") + 1:] == ["poppler-utils"]


@pytest.mark.parametrize("sudo", [None, "asks a password"])
def test_without_root_or_passwordless_sudo_one_message_says_what_to_run(sudo):
    machine = FakeMachine(euid=1000, sudo=sudo)
    problems = system_packages.ensure([CHROMIUM], machine.system)
    assert machine.apt_commands() == []
    message = problems["chromium"]
    assert "chromium not found" in message and "sudo is missing or asks for a password" in message
    assert "sudo apt-get update && sudo apt-get install -y chromium chromium-driver" in message
    assert "LATTN_CHROMIUM=/path/to/chromium" in message
    assert list(problems) == ["chromium"]


def test_a_machine_without_apt_is_told_what_to_set():
    machine = FakeMachine(apt=False, euid=0)
    message = system_packages.ensure([CHROMIUM, PDFTOPPM], machine.system)["pdftoppm"]
    assert machine.commands == []
    assert "no apt-get" in message and "install chromium, pdftoppm and set LATTN_CHROMIUM" in message


@pytest.mark.parametrize("fail", ["update", "install"])
def test_a_failing_apt_is_reported_with_its_last_words(fail):
    machine = FakeMachine(euid=0, fail=fail)
    message = system_packages.ensure([CHROMIUM], machine.system)["chromium"]
    assert f"apt-get -o DPkg::Lock::Timeout={system_packages.LOCK_TIMEOUT_S} {fail}" in message
    assert "(exit 100): E: Unable to locate package chromium" in message
    assert len(machine.apt_commands()) == (1 if fail == "update" else 2)  # stops at the failure


def test_a_program_installed_by_a_neighbour_while_waiting_for_the_lock_is_not_installed_again(tmp_path):
    """Two test workers both miss chromium: the one that waited for the other's install finds
    it afterwards and runs no apt of its own."""
    machine = FakeMachine(euid=0, lock=tmp_path / "apt.lock")
    looked = threading.Event()
    which = machine.system.which
    machine.system.which = lambda name: looked.set() or which(name)
    problems = {}
    with FileLock(tmp_path / "apt.lock"):  # the neighbour installing
        worker = threading.Thread(target=lambda: problems.update(system_packages.ensure([CHROMIUM], machine.system)))
        worker.start()
        assert looked.wait(timeout=60), "ensure never looked for chromium"
        machine.on_path["chromium"] = "/usr/bin/chromium"
    worker.join(timeout=60)
    assert not worker.is_alive() and problems == {}
    assert machine.apt_commands() == [] and machine.said == []


def test_an_install_that_leaves_the_program_missing_is_reported():
    machine = FakeMachine(euid=0, installs=False)
    message = system_packages.ensure([CHROMIUM], machine.system)["chromium"]
    assert "apt-get finished, yet chromium is not on PATH" in message


def test_the_environment_variable_names_the_program_and_nothing_is_installed(tmp_path):
    browser = tmp_path / "chrome"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    machine = FakeMachine(euid=0, environ={"LATTN_CHROMIUM": str(browser)})
    assert system_packages.ensure([CHROMIUM], machine.system) == {}
    assert system_packages.find(CHROMIUM, machine.system) == str(browser)
    assert machine.commands == []


def test_an_environment_variable_naming_no_program_is_reported_not_overridden(tmp_path):
    machine = FakeMachine(euid=0, environ={"LATTN_CHROMIUM": str(tmp_path / "nowhere")})
    message = system_packages.ensure([CHROMIUM], machine.system)["chromium"]
    assert f"LATTN_CHROMIUM={tmp_path / 'nowhere'} is not an executable file" in message
    assert machine.commands == []


# ---- conftest.py asks for a program only when a selected test needs it --------------------

def fake_session(fixture_names_per_test, collect_only=False):
    config = SimpleNamespace(option=SimpleNamespace(collectonly=collect_only), stash=pytest.Stash(),
                             pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    items = [SimpleNamespace(fixturenames=names) for names in fixture_names_per_test]
    return SimpleNamespace(config=config, items=items)


@pytest.mark.parametrize("selected, asked", [
    ([["rng"], ["book_build", "chromium", "site_url"]], ["chromium"]),  # a browser test is selected
    ([["rng"], ["book_build"]], []),                                    # browser tests deselected
])
def test_conftest_installs_only_what_the_selected_tests_use(monkeypatch, selected, asked):
    calls = []
    monkeypatch.setattr(system_packages, "ensure", lambda programs, system: calls.append(programs) or {})
    conftest.pytest_collection_finish(fake_session(selected))
    assert calls == [[conftest.PROGRAMS[name] for name in asked]]


def test_conftest_installs_nothing_when_only_collecting(monkeypatch):
    monkeypatch.setattr(system_packages, "ensure", lambda *args: pytest.fail("ensure was called"))
    conftest.pytest_collection_finish(fake_session([["chromium"]], collect_only=True))


def test_a_program_that_could_not_be_installed_fails_its_tests_with_the_message(monkeypatch):
    message = "chromium not found, and not installed: reasons. With apt (Debian), run: ..."
    monkeypatch.setattr(system_packages, "ensure", lambda programs, system: {"chromium": message})
    session = fake_session([["chromium"]])
    conftest.pytest_collection_finish(session)
    with pytest.raises(pytest.fail.Exception, match="chromium not found, and not installed: reasons"):
        conftest.program_path(session.config, "chromium")
