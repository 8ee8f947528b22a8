"""IPython / Jupyter magics: `%load_ext gnnprof`, then

    %gnnprof [-f FUNC]... [-o PROFILE] [--html FILE] [--show] [--lines none] [--ops] [--against PROFILE] statement
    %%gnnprof [options]          (the whole cell)

profiles that statement or cell alone and prints gnnprof's report of it: the line table of
the cell's code (and of each FUNC: `-f train -f Model.forward`, names in the notebook's
namespace), the training loop it runs (auto selection, as under `gnnprof run`), stages and
iterations. Each use is its own session and profile (default: a file in a temporary folder,
named in the output). Loading the extension stops the session that importing gnnprof
started (its profile is written as at exit): in a notebook, gnnprof then records only inside
the magics. Under `gnnprof run` the run's session is left alone: the magic runs the code and
the run's profile has it. `--against PROFILE` (an earlier run's `-o`) then compares the two per
stage and per line (`gnnprof compare`): the before/after of a change, with statistics. `--show`
puts the HTML report (one offline page) in the cell's output, in an iframe.
"""
import io
import os
import shlex
import subprocess
import sys
import tempfile

USAGE = ("usage: %gnnprof [-f FUNC]... [-o PROFILE] [--html FILE] [--show] [--lines none] [--ops] "
         "[--against PROFILE] statement")
_OPTIONS = {"-f": "functions", "--function": "functions", "-o": "output", "--output": "output",
            "--html": "html", "--lines": "lines", "--against": "against"}
_runs = {"n": 0, "dir": None, "active": False, "said": set()}


def _word(line, i):
    """The shell-like word at line[i:] (quotes honoured) and the index after it."""
    lex = shlex.shlex(io.StringIO(line[i:]), posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    word = lex.get_token()  # ValueError on an unclosed quote
    return word, i + lex.instream.tell()


def _parse(line):
    """(options, statement) from the magic's line: options up to the first word that is not
    one; the statement is the rest of the line as written. ValueError with a message."""
    opts = {"functions": [], "output": None, "html": None, "lines": "auto", "ops": False, "against": None,
            "show": False}
    i = 0
    while True:
        i = len(line) - len(line[i:].lstrip())
        if not line.startswith("-", i):
            break
        try:
            word, i = _word(line, i)
            if word == "--":
                break
            if word in ("--ops", "--show"):
                opts[word[2:]] = True
                continue
            key = _OPTIONS.get(word)
            if key is None:
                raise ValueError(f"%gnnprof: unknown option {word}; {USAGE}")
            value, i = _word(line, i)
        except ValueError as e:
            raise ValueError(str(e) if str(e).startswith("%gnnprof") else f"%gnnprof: {e}; {USAGE}")
        if value is None:
            raise ValueError(f"%gnnprof: no value for {word}; {USAGE}")
        if key == "functions":
            opts["functions"].append(value)
        else:
            opts[key] = value
    if opts["lines"] not in ("auto", "none"):
        raise ValueError(f"%gnnprof: --lines {opts['lines']}: auto or none (name functions with -f)")
    if opts["against"] is not None:
        opts["against"] = os.path.abspath(opts["against"])
        if not os.path.isfile(opts["against"]):
            raise ValueError(f"%gnnprof: --against {opts['against']}: no such profile")
    return opts, line[i:].strip()


def _say_once(key, message):
    if key not in _runs["said"]:
        _runs["said"].add(key)
        print(message, file=sys.stderr)


def _resolve(gnnprof, name, ns):
    """The function a dotted name in the notebook's namespace stands for (it must have code)."""
    head, *tail = name.split(".")
    if head not in ns:
        raise NameError(f"%gnnprof: -f {name}: '{head}' is not defined")
    obj = ns[head]
    for part in tail:
        obj = getattr(obj, part)
    if getattr(gnnprof._function_of(obj), "__code__", None) is None:
        raise TypeError(f"%gnnprof: -f {name}: {obj!r} has no Python code to trace")
    return obj


def _output(gnnprof, opts):
    if opts["output"]:
        return os.path.abspath(opts["output"])
    if _runs["dir"] is None:
        _runs["dir"] = gnnprof._state.get("ipython_dir") or tempfile.mkdtemp(prefix="gnnprof-")
    _runs["n"] += 1
    return os.path.join(_runs["dir"], f"run-{_runs['n']}.json")


class _Session:
    """A session of its own around the profiled code, writing to `path`."""

    def __init__(self, gnnprof, path):
        self.g, self.path = gnnprof, path
        self.started = self.written = False

    def __enter__(self):
        g = self.g
        if g.is_running():
            g.stop()
        self.started = g._with_output(self.path, g.start) == 0
        return self

    def __exit__(self, *exc):
        self.written = self.started and self.g.stop() == 0
        return False


def _sources(native, path):
    """A folder with the source of each traced file that exists only in linecache (notebook
    cells), for the report's --source-root; None when there is none."""
    import linecache
    folder = None
    for filename, *_ in native.selected():
        if os.path.exists(filename) or filename not in linecache.cache:
            continue
        if folder is None:
            folder = os.path.splitext(path)[0] + ".sources"
            os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, os.path.basename(filename)), "w") as f:
            f.writelines(linecache.getlines(filename))
    return folder


def _run(cmd, what):
    """Runs the gnnprof CLI; its output goes to the cell's."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"%gnnprof: cannot {what} ({e})", file=sys.stderr)


def _show(html):
    """The HTML report in the cell's output: the whole page in an iframe (its scripts and styles
    stay its own)."""
    import html as escape
    from IPython.display import HTML, display
    with open(html, encoding="utf-8") as f:
        page = f.read()
    display(HTML(f'<iframe srcdoc="{escape.escape(page, quote=True)}" '
                 'style="width: 100%; height: 720px; border: 1px solid #ccc"></iframe>'))


def _report(native, path, opts):
    from . import _paths
    sources = _sources(native, path)
    cmd = [_paths.CLI, "report", path]
    if sources:
        cmd += ["--source-root", sources]
    html = opts["html"] or (os.path.splitext(path)[0] + ".html" if opts["show"] else None)
    if html:
        cmd += ["--html", html]
    if opts["ops"]:
        cmd.append("--ops")
    _run(cmd, "render the report")
    again = f"gnnprof report {shlex.quote(path)}" + (f" --source-root {shlex.quote(sources)}" if sources else "")
    if html:
        print(f"gnnprof: HTML report {os.path.abspath(html)}")
    print(f"gnnprof: report it again with: {again}")
    if opts["show"] and os.path.isfile(html):
        _show(html)
    if opts["against"]:
        _run([_paths.CLI, "compare", opts["against"], path] + (["--ops"] if opts["ops"] else []), "compare")


class _Magics:
    def __init__(self, shell):
        self.shell = shell

    def _compile(self, source, cell):
        """(code, mode): a line magic's expression is evaluated (its value returned)."""
        transformed = self.shell.transform_cell(source) if cell else source
        filename = self.shell.compile.cache(transformed, self.shell.execution_count, source)
        if not cell:
            try:
                return self.shell.compile(transformed, filename, "eval"), "eval"
            except SyntaxError:
                pass
        return self.shell.compile(transformed, filename, "exec"), "exec"

    def gnnprof(self, line, cell=None):
        __tracebackhide__ = True  # IPython's traceback of a failing cell shows the cell, not the magic
        import gnnprof
        native = gnnprof._native
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
            functions = [_resolve(gnnprof, name, ns) for name in opts["functions"]]
        except (NameError, AttributeError, TypeError) as e:
            print(e, file=sys.stderr)
            return None
        code, mode = self._compile(source, cell is not None)

        def run():
            __tracebackhide__ = True
            return eval(code, ns) if mode == "eval" else exec(code, ns)

        lines = opts["lines"] != "none"
        if native is None or gnnprof.status()["how"] != "loaded":
            why = (gnnprof.status()["how"] if native is None else
                   "this process is profiled by `gnnprof run`: its profile has this code")
            _say_once("unprofiled", f"%gnnprof: not profiled here ({why})")
            return run()
        if _runs["active"]:  # inside another %gnnprof: part of its session
            if lines:
                native.select(code, native.ROLE_EXPLICIT)
                for f in functions:
                    gnnprof.profile(f)
            return run()
        path = _output(gnnprof, opts)
        result = failure = None
        _runs["active"] = True
        try:
            with _Session(gnnprof, path) as s:
                if not s.started:
                    _say_once("disabled", "%gnnprof: the session did not start (GNNPROF_ENABLED=0?): not profiled")
                elif lines:
                    native.select(code, native.ROLE_EXPLICIT)
                    for f in functions:
                        gnnprof.profile(f)
                    native.set_auto(gnnprof._state["auto"])
                else:  # what earlier runs selected stays untraced too
                    native.set_hook(False)
                    native.note_collector("python-lines", False, "off (%gnnprof --lines none)")
                try:
                    result = run()
                except BaseException as e:  # reported below, then raised as it was
                    failure = e
                finally:
                    native.set_auto(False)
                    if s.started and lines:
                        gnnprof._note_lines(final=True)
        finally:
            _runs["active"] = False
        if s.written:
            _report(native, path, opts)
        elif s.started:
            print(f"%gnnprof: no profile written to {path}", file=sys.stderr)
        if failure is not None:
            raise failure
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
