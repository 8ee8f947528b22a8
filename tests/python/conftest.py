"""Fixtures for gnnprof's Python tests: run scripts under `gnnprof run` (or with the package
imported on its own) and read back their profiles. ctest sets GNNPROF_CLI and
GNNPROF_PYTHON_DIR (tests/CMakeLists.txt)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
CLI = os.environ.get("GNNPROF_CLI", os.path.join(HERE, "../../build/cli/gnnprof"))
PYDIR = os.environ.get("GNNPROF_PYTHON_DIR", os.path.join(HERE, "../../build/python"))
PYTHON = os.environ.get("GNNPROF_TEST_PYTHON", "/usr/bin/python3")


def have_module(name):
    """Whether the traced Python imports `name`."""
    return subprocess.run([PYTHON, "-c", f"import {name}"], capture_output=True).returncode == 0


def have_torch():
    return have_module("torch")


needs_torch = pytest.mark.skipif(not have_torch(), reason="/usr/bin/python3 has no torch")


class Run:
    def __init__(self, proc, profile_path):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.path = profile_path
        self.profile = None
        if profile_path and os.path.exists(profile_path):
            with open(profile_path) as f:
                self.profile = json.load(f)

    def lines(self, function=None):
        """{line number: line entry} of the profile's traced lines (of one function)."""
        out = {}
        for entry in self.profile["lines"]:
            if function is None or entry["function"] == function:
                out[entry["line"]] = entry
        return out

    def collector(self, name):
        for c in self.profile["collectors"]:
            if c["name"] == name:
                return c
        return None


def line_of(path, text, nth=1):
    """1-based number of the `nth` line of `path` containing `text` (the first by default)."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                nth -= 1
                if nth == 0:
                    return n
    raise AssertionError(f"{text!r} not in {path}")


def script(name):
    return os.path.join(SCRIPTS, name)


@pytest.fixture
def gnnprof_run(tmp_path):
    """gnnprof_run(script, *args, lines=[...], env={...}, python=...) under `gnnprof run`."""
    def run(path, *args, lines=(), env=None, python=PYTHON, cli_args=(), timeout=300):
        out = tmp_path / f"p{len(list(tmp_path.iterdir()))}.json"
        cmd = [CLI, "run", "-o", str(out)]
        for spec in lines:
            cmd += ["--lines", spec]
        cmd += list(cli_args) + ["--", python, path, *args]
        e = dict(os.environ)
        for k in ("GNNPROF_LINES", "GNNPROF_ENABLED", "GNNPROF_PREFETCH", "GNNPROF_PREFETCH_LOADERS"):
            e.pop(k, None)
        e.update(env or {})
        proc = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout, cwd=str(tmp_path))
        return Run(proc, str(out))
    return run


@pytest.fixture
def plain_run(tmp_path):
    """The same script without gnnprof (the baseline for output and exit code)."""
    def run(path, *args, env=None, python=PYTHON, timeout=300):
        e = dict(os.environ)
        e.update(env or {})
        proc = subprocess.run([python, path, *args], capture_output=True, text=True, env=e, timeout=timeout,
                              cwd=str(tmp_path))
        return Run(proc, None)
    return run


@pytest.fixture
def standalone_run(tmp_path):
    """The script with the package on PYTHONPATH and no `gnnprof run`: it imports gnnprof itself."""
    def run(path, *args, env=None, timeout=300):
        out = tmp_path / "standalone.json"
        e = dict(os.environ)
        for k in ("GNNPROF_LINES", "GNNPROF_ENABLED", "GNNPROF_PREFETCH"):
            e.pop(k, None)
        e["PYTHONPATH"] = PYDIR + (":" + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e["GNNPROF_OUTPUT"] = str(out)
        e.update(env or {})
        proc = subprocess.run([PYTHON, path, *args], capture_output=True, text=True, env=e, timeout=timeout,
                              cwd=str(tmp_path))
        return Run(proc, str(out))
    return run
