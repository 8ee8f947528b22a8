"""The IPython / Jupyter magics (python/gnnprof/_ipython.py): `%load_ext gnnprof`, then
`%gnnprof statement` and `%%gnnprof` profile one statement or cell each, with the line table of
the cell, of the functions named with -f and of the training loop found as under `gnnprof run`.
Skipped where this Python has no IPython; the package without IPython is tested too."""
import glob
import os
import re
import subprocess

import pytest

from conftest import PYDIR, PYTHON, needs_torch, script

HAVE_IPYTHON = subprocess.run([PYTHON, "-c", "import IPython"], capture_output=True).returncode == 0
needs_ipython = pytest.mark.skipif(not HAVE_IPYTHON, reason="this Python has no IPython")

WORK = "def work(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t"


def cells(tmp_path, *cells, env=None):
    e = dict(os.environ)
    for k in ("GNNPROF_LINES", "GNNPROF_ENABLED", "GNNPROF_OUTPUT", "GNNPROF_QUIET"):
        e.pop(k, None)
    e["PYTHONPATH"] = PYDIR
    e["IPYTHONDIR"] = str(tmp_path / "ipython")  # not the user's profile and history
    e["TMPDIR"] = str(tmp_path / "tmp")
    os.makedirs(e["TMPDIR"], exist_ok=True)
    e.update(env or {})
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    return subprocess.run([PYTHON, script("ipython_cells.py"), *cells], capture_output=True, text=True, env=e,
                          cwd=str(work), timeout=300)


def row(out, code):
    """(hits, time) of the line table row whose text is `code`, from the first table that has it."""
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(.*)$", line)
        if m and m.group(6).strip().endswith(code):
            return int(m.group(2)), float(m.group(3))
    return None


@needs_ipython
def test_a_statement_and_a_cell_each_get_their_own_line_table(tmp_path):
    r = cells(tmp_path, "%load_ext gnnprof", WORK, "r = %gnnprof -f work work(100000)", "print('r', r)",
              "%%gnnprof\ns = 0\nfor i in range(1000):\n    s += i\nprint('s', s)")
    assert r.returncode == 0, r.stderr
    assert "r 4999950000" in r.stdout and "s 499500" in r.stdout  # the statement's value, the cell's output
    reports = r.stdout.split("gnnprof 0.1.0 profile of")
    assert len(reports) == 3, r.stdout
    first, second = reports[1], reports[2]
    assert "Function: work at line 1" in first
    assert row(first, "t += i")[0] == 100000  # every hit of a tight loop: no event dropped
    assert row(first, "for i in range(n):")[0] == 100001
    assert re.search(r"Events: \d+ recorded, 0 dropped", first)
    assert "def work(n):" in first  # the cell's source, from the folder the magic writes for the report
    assert row(second, "s += i")[0] == 1000 and row(second, "print('s', s)")[0] == 1
    assert "Function: work" not in second  # a session of its own
    # Nothing in the notebook's folder; the profiles in one temporary folder.
    assert os.listdir(tmp_path / "cwd") == []
    made = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "tmp" / "gnnprof-*" / "*")))
    assert made == ["before-load_ext.json", "run-1.json", "run-1.sources", "run-2.json", "run-2.sources"], made
    assert "report it again with: gnnprof report" in first


@needs_ipython
def test_options_keep_the_profile_write_html_and_bad_ones_run_nothing(tmp_path):
    r = cells(tmp_path, "%load_ext gnnprof", WORK, "%gnnprof -o keep.json --html keep.html -f work work(10)",
              "%gnnprof --bogus work(10)", "%gnnprof -f nowhere work(10)", "%gnnprof --lines none work(10)",
              "%gnnprof")
    assert r.returncode == 0, r.stderr
    cwd = tmp_path / "cwd"
    assert (cwd / "keep.json").exists() and (cwd / "keep.html").exists()
    assert "<html" in (cwd / "keep.html").read_text()[:200].lower()
    err = r.stderr.splitlines()
    assert any(l.startswith("%gnnprof: unknown option --bogus") for l in err), r.stderr
    assert any("-f nowhere: 'nowhere' is not defined" in l for l in err), r.stderr
    assert any(l.startswith("%gnnprof: nothing to run") for l in err), r.stderr
    reports = r.stdout.split("gnnprof 0.1.0 profile of")
    assert len(reports) == 3, r.stdout  # the -o run and the --lines none run
    assert row(reports[1], "t += i")[0] == 10
    assert row(reports[2], "t += i") is None and "python-lines (off: off (%gnnprof --lines none))" in reports[2]


@needs_ipython
@needs_torch
def test_a_training_loop_defined_in_an_earlier_cell_is_found(tmp_path):
    setup = ("import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))\n"
             "opt = torch.optim.Adam(model.parameters())\nX = torch.randn(4096, 64); Y = torch.randint(0, 4, (4096,))")
    train = ("def train(steps):\n    for s in range(steps):\n        idx = torch.randint(0, 4096, (256,))\n"
             "        x, y = X[idx], Y[idx]\n        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
             "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n    return loss.item()")
    r = cells(tmp_path, "%load_ext gnnprof", setup, train, "%%gnnprof\nloss = train(20)", "%%gnnprof\nloss = train(20)",
              env={"GNNPROF_TORCH_SAMPLE": "all"})
    assert r.returncode == 0, r.stderr
    reports = r.stdout.split("gnnprof 0.1.0 profile of")
    assert len(reports) == 3, r.stdout
    # Each profiled cell is a session of its own that finds the loop: selected at its first step
    # (adopted at its next line) in the first, traced from its first line in the second.
    for rep, steps in zip(reports[1:], (19, 20)):
        assert "Function: train at line 1" in rep, rep
        assert row(rep, "opt.step()")[0] == steps
        assert re.search(r"^forward\s+compute", rep, re.M) and re.search(r"^backward\s+compute", rep, re.M)
        # 20 (19: the first cell's first step) iterations, or those after a detected warm-up.
        assert re.search(r"^(20|19) complete iterations|^1[5-9] iterations after the warm-up", rep, re.M), rep


def test_the_package_imports_without_ipython(tmp_path):
    """IPython is optional: the package never imports it; only %load_ext does."""
    e = dict(os.environ, PYTHONPATH=PYDIR, GNNPROF_ENABLED="0")
    code = ("import sys; sys.modules['IPython'] = None\nimport gnnprof\n"
            "assert callable(gnnprof.load_ipython_extension)\nprint('ok', 'IPython' in sys.modules and sys.modules['IPython'] is None)")
    r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=e, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "ok True", r.stderr


@needs_ipython
def test_a_failing_cell_is_reported_then_raises_and_nested_magics_share_the_outer_session(tmp_path):
    r = cells(tmp_path, "%load_ext gnnprof", WORK,
              "%%gnnprof -o 'my run.json'\nx = work(50)\nraise ValueError('boom ' + str(x))",
              "print('after', x)",
              "%%gnnprof\ny = work(20)\nz = %gnnprof -f work work(30)\nprint('yz', y, z)")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "ValueError: boom 1225" in out  # IPython's traceback: the cell's exception, as raised
    assert "_ipython.py" not in out, out  # the cell's frames, not the magic's
    assert "after 1225" in out
    assert (tmp_path / "cwd" / "my run.json").exists()  # a quoted -o value
    reports = out.split("gnnprof 0.1.0 profile of")
    assert len(reports) == 3, out  # the failed cell's report, and one for the nested pair
    assert row(reports[1], "x = work(50)")[0] == 1
    assert row(reports[1], "raise ValueError('boom ' + str(x))")[0] == 1
    assert "yz 190 435" in out
    # One session: the outer cell's lines, and work's from the inner -f on (its 30, not the 20).
    assert row(reports[2], "y = work(20)")[0] == 1 and row(reports[2], "print('yz', y, z)")[0] == 1
    assert row(reports[2], "t += i")[0] == 30


@needs_ipython
def test_unprofiled_cases_say_so_once_and_still_run_the_code(tmp_path):
    r = cells(tmp_path, "%load_ext gnnprof", WORK, "%gnnprof print('ran', work(4))", "%gnnprof print('ran', work(5))",
              env={"GNNPROF_ENABLED": "0"})
    assert r.returncode == 0, r.stderr
    assert "ran 6" in r.stdout and "ran 10" in r.stdout
    assert "gnnprof 0.1.0 profile of" not in r.stdout
    assert r.stderr.count("%gnnprof:") == 1, r.stderr
    # %reload_ext: the package module runs again; the magics still profile, hooks are not doubled.
    r = cells(tmp_path, "%load_ext gnnprof", WORK, "%reload_ext gnnprof", "%gnnprof -f work work(7)",
              "import atexit, gnnprof; print('watchers', sum(getattr(f, 'name', '') == 'torch' for f in __import__('sys').meta_path))")
    assert r.returncode == 0, r.stderr
    assert row(r.stdout, "t += i")[0] == 7, r.stdout + r.stderr
    assert "watchers 1" in r.stdout


HAVE_KERNEL = subprocess.run([PYTHON, "-c", "import ipykernel, jupyter_client"], capture_output=True).returncode == 0


@pytest.mark.skipif(not HAVE_KERNEL, reason="this Python has no ipykernel and jupyter_client")
def test_in_a_jupyter_kernel_cells_are_files_the_report_still_shows(tmp_path):
    """A Jupyter kernel names each cell's code /tmp/ipykernel_PID/HASH.py, a file that does not
    exist: the magic writes the sources the report shows; the loop there is the user's code."""
    e = dict(os.environ, PYTHONPATH=PYDIR, IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
             PYDEVD_DISABLE_FILE_VALIDATION="1")
    for k in ("GNNPROF_LINES", "GNNPROF_ENABLED", "GNNPROF_OUTPUT", "GNNPROF_QUIET"):
        e.pop(k, None)
    r = subprocess.run([PYTHON, script("jupyter_kernel_cells.py"), "%load_ext gnnprof", WORK, "%gnnprof -f work work(1000)",
                        "%gnnprof --show work(7)"], capture_output=True, text=True, env=e, cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[result] 499500" in r.stdout, r.stdout
    assert re.search(r"^File: .*/ipykernel_\d+/\d+\.py$", r.stdout, re.M), r.stdout
    assert "def work(n):" in r.stdout and row(r.stdout, "t += i")[0] == 1000
    # --show: the HTML report (its line table with the cell's source) in the cell's output.
    shown = [l for l in r.stdout.splitlines() if l.startswith("[display] ")]
    assert len(shown) == 1 and shown[0].startswith('[display] <iframe srcdoc="&lt;!doctype html&gt;'), shown[:1]
    assert "t += i" in shown[0] and "def work(n):" in shown[0]


@needs_ipython
def test_against_compares_a_cell_with_an_earlier_run_line_by_line(tmp_path):
    """The seed's before/after pair in a notebook: the loop redefined in a new cell (its cell's
    file name changes) still meets its earlier self; the edited line gets its verdict."""
    loop = ("def train(n):\n    for i in range(n):\n        with gnnprof.stage('work'):\n"
            "            x = sum(range(N))\n        gnnprof.step()")
    r = cells(tmp_path, "%load_ext gnnprof", "import gnnprof\n" + loop.replace("N", "30000"),
              "%gnnprof -o before.json -f train train(40)", loop.replace("N", "3000"),
              "%gnnprof --against before.json -f train train(40)", "%gnnprof --against missing.json train(1)")
    assert r.returncode == 0, r.stderr
    assert "\nbaseline:  " in r.stdout, r.stdout
    out = r.stdout[r.stdout.index("\nbaseline:  "):]  # gnnprof compare's part
    assert "Lines (per-iteration medians; matched by file, function and statement text)" in out, out
    edited = [l for l in out.splitlines() if "x = sum(range(30000))  ->  x = sum(range(3000))" in l]
    assert len(edited) == 1 and "edited, faster" in edited[0], out
    same = [l for l in out.splitlines() if l.rstrip().endswith("for i in range(n):")]
    assert len(same) == 1 and re.match(r"\s+3\s+2\s", same[0]), out  # matched across the two cells' files
    assert re.search(r"^work\s+loop thread .* faster$", out, re.M), out
    assert "--against" in r.stderr and "missing.json: no such profile" in r.stderr
