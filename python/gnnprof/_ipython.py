"""IPython / Jupyter magics: `%load_ext gnnprof`, then

    %gnnprof [-f FUNC]... [-o PROFILE] [--html FILE] [--lines none] [--ops] statement
    %%gnnprof [options]          (the whole cell)

profiles that statement or cell alone and prints gnnprof's report of it: the line table of
the cell's code (and of each FUNC: `-f train -f Model.forward`, names in the notebook's
namespace), the training loop it runs (auto selection, as under `gnnprof run`), stages and
iterations. Each use is its own session and profile (default: a file in a temporary folder,
named in the output). Loading the extension stops the session that importing gnnprof
started (its profile is written as at exit): in a notebook, gnnprof then records only inside
the magics. Under `gnnprof run` the run's session is left alone: the magic runs the code and
the run's profile has it.
"""
import os
import shlex
import subprocess
import sys
import tempfile

_runs = {"n": 0, "dir": None}


def _parse(line):
    """(options, statement) from the magic's line; raises ValueError with a usage message."""
    words = shlex.split(line, posix=True)
    opts = {"functions": [], "output": None, "html": None, "lines": "auto", "ops": False}
    i = 0
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if w == "--":
            i += 1
            break
        if w == "--ops":
            opts["ops"] = True
            i += 1
            continue
        key = {"-f": "functions", "--function": "functions", "-o": "output", "--output": "output",
               "--html": "html", "--lines": "lines"}.get(w)
        if key is None or i + 1 >= len(words):
            raise ValueError(f"%gnnprof: {'unknown option' if key is None else 'no value for'} {w}; "
                             "usage: %gnnprof [-f FUNC]... [-o PROFILE] [--html FILE] [--lines none] [--ops] statement")
        if key == "functions":
            opts["functions"].append(words[i + 1])
        else:
            opts[key] = words[i + 1]
        i += 2
    if opts["lines"] not in ("auto", "none"):
        raise ValueError(f"%gnnprof: --lines {opts['lines']}: auto or none (name functions with -f)")
    # The statement is the rest of the line as written (quotes kept).
    rest = line
    for w in words[:i]:
        rest = rest.split(w, 1)[1] if w in rest else rest
    return opts, rest.strip()


def _resolve(name, ns):
    """The function a dotted name in the notebook's namespace stands for."""
    head, *tail = name.split(".")
    if head not in ns:
        raise NameError(f"%gnnprof: -f {name}: '{head}' is not defined")
    obj = ns[head]
    for part in tail:
        obj = getattr(obj, part)
    return obj


def _output(opts):
    if opts["output"]:
        return os.path.abspath(opts["output"])
    if _runs["dir"] is None:
        import gnnprof
        _runs["dir"] = gnnprof._state.get("ipython_dir") or tempfile.mkdtemp(prefix="gnnprof-")
    _runs["n"] += 1
    return os.path.join(_runs["dir"], f"run-{_runs['n']}.json")


class _Session:
    """A session of its own around the profiled code, writing to `path`."""

    def __init__(self, gnnprof, path):
        self.g, self.path = gnnprof, path

    def __enter__(self):
        g = self.g
        if g.is_running():
            g.stop()
        old = os.environ.get("GNNPROF_OUTPUT")
        os.environ["GNNPROF_OUTPUT"] = self.path
        try:
            self.started = g.start() == 0
        finally:
            if old is None:
                del os.environ["GNNPROF_OUTPUT"]
            else:
                os.environ["GNNPROF_OUTPUT"] = old
        return self

    def __exit__(self, *exc):
        self.written = self.started and self.g.stop() == 0
        return False


def _sources(path):
    """A folder with the source of each traced file that exists only in linecache (notebook
    cells), for the report's --source-root; None when there is none."""
    import linecache
    from . import _native
    folder = None
    for filename, *_ in _native.selected():
        if os.path.exists(filename) or filename not in linecache.cache:
            continue
        if folder is None:
            folder = os.path.splitext(path)[0] + ".sources"
            os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, os.path.basename(filename)), "w") as f:
            f.writelines(linecache.getlines(filename))
    return folder


def _report(path, opts):
    from . import _paths
    cmd = [_paths.CLI, "report", path]
    sources = _sources(path)
    if sources:
        cmd += ["--source-root", sources]
    if opts["html"]:
        cmd += ["--html", opts["html"]]
    if opts["ops"]:
        cmd.append("--ops")
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
    again = f"gnnprof report {shlex.quote(path)}" + (f" --source-root {shlex.quote(sources)}" if sources else "")
    if opts["html"]:
        print(f"gnnprof: HTML report {os.path.abspath(opts['html'])}")
    print(f"gnnprof: report it again with: {again}")


class _Magics:
    def __init__(self, shell):
        self.shell = shell

    def gnnprof(self, line, cell=None):
        import gnnprof
        from . import _native
        try:
            opts, statement = _parse(line)
        except ValueError as e:
            print(e, file=sys.stderr)
            return None
        source = cell if cell is not None else statement
        if not source.strip():
            print("%gnnprof: nothing to run (%gnnprof statement, or %%gnnprof above a cell)", file=sys.stderr)
            return None
        ns = self.shell.user_ns
        try:
            functions = [_resolve(name, ns) for name in opts["functions"]]
        except (NameError, AttributeError) as e:
            print(e, file=sys.stderr)
            return None
        own = gnnprof.status()["how"] == "loaded"  # not inside gnnprof run's session
        transformed = self.shell.transform_cell(source) if cell is not None else source
        filename = self.shell.compile.cache(transformed, self.shell.execution_count, source)
        mode = "exec"
        if cell is None:
            try:
                code = self.shell.compile(transformed, filename, "eval")
                mode = "eval"
            except SyntaxError:
                pass
        if mode == "exec":
            code = self.shell.compile(transformed, filename, "exec")
        if not own:
            return eval(code, ns) if mode == "eval" else exec(code, ns)
        lines = opts["lines"] != "none" and _native is not None
        if lines:
            _native.select(code, _native.ROLE_EXPLICIT)
            for f in functions:
                gnnprof.profile(f)
        _native.set_auto(lines and gnnprof._state["auto"])
        path = _output(opts)
        result = None
        with _Session(gnnprof, path) as s:
            if s.started and not lines:  # what earlier runs selected stays untraced too
                _native.set_hook(False)
                _native.note_collector("python-lines", False, "off (%gnnprof --lines none)")
            try:
                result = eval(code, ns) if mode == "eval" else exec(code, ns)
            finally:
                _native.set_auto(False)
                if s.started and lines:
                    gnnprof._note_lines(final=True)
        if s.started and s.written:
            _report(path, opts)
        else:
            print(f"%gnnprof: no profile written ({'the session did not start' if not s.started else path})",
                  file=sys.stderr)
        return result


def load(ipython):
    """`%load_ext gnnprof`: registers %gnnprof / %%gnnprof."""
    import gnnprof
    if gnnprof.status()["how"] == "loaded" and gnnprof.is_running():
        # The import's session: its profile is written now, as at exit (into the temporary
        # folder when this load imported gnnprof).
        gnnprof.stop()
    m = _Magics(ipython)
    ipython.register_magic_function(m.gnnprof, magic_kind="line_cell", magic_name="gnnprof")
