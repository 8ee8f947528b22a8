"""Which code objects gnnprof traces line by line, and their statement maps.

Selection (GNNPROF_LINES, `gnnprof run --lines`, `python3 -m gnnprof --lines`):
    auto            the training loop (the user frame that calls the optimizer's step) and the
                    user generators it pulls batches from (the default)
    none            no line tracing (@gnnprof.profile included)
    FILE[:FUNCTION] every function of FILE, or the named one (name or qualified name);
                    FILE is a path, or a bare file name matched anywhere
Several, separated by ';' (explicit specs replace auto unless 'auto' is among them).

A statement's hits and time go to its first line: the statement map sends every line a
statement spans (and a compound statement's header lines) to that first line.
"""
import ast
import linecache
import os
import re
import site
import sys
import sysconfig
import textwrap

_IDENT = re.compile(r"^(<module>|[A-Za-z_][A-Za-z0-9_.<>]*)$")


class Spec:
    def __init__(self, text):
        self.text = text
        file, func = text, None
        head, sep, tail = text.rpartition(":")
        if sep and head and _IDENT.match(tail) and (head.endswith(".py") or os.path.exists(head)):
            file, func = head, tail
        self.file = file
        self.func = func
        self.by_path = "/" in file
        self.path = os.path.realpath(file) if self.by_path else None
        self.matched = False

    def matches(self, filename, name, qualname, realpath):
        if self.by_path:
            if realpath(filename) != self.path:
                return False
        elif os.path.basename(filename) != self.file:
            return False
        if self.func is None:
            # A whole file: its functions and module code, not the comprehensions and lambdas
            # inside their lines (whose time those lines already hold).
            return not name.startswith("<") or name == "<module>"
        return name == self.func or qualname == self.func or qualname.endswith("." + self.func)


def parse(value):
    """GNNPROF_LINES -> (auto, [Spec]). Empty or unset means auto."""
    value = (value or "").strip()
    if value in ("", "auto"):
        return True, []
    if value in ("none", "0", "off"):
        return False, []
    auto, specs = False, []
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        if part == "auto":
            auto = True
        else:
            specs.append(Spec(part))
    return auto, specs


class Decider:
    """decider(code) -> bool, called once per code object by the native hook."""

    def __init__(self, specs):
        self.specs = specs
        self._real = {}

    def _realpath(self, filename):
        r = self._real.get(filename)
        if r is None:
            r = self._real[filename] = os.path.realpath(filename)
        return r

    def __call__(self, code):
        hit = False
        for s in self.specs:
            if s.matches(code.co_filename, code.co_name, code.co_qualname, self._realpath):
                s.matched = True
                hit = True
        return hit


def library_prefixes(extra=()):
    """Path prefixes of code that is not the user's: the standard library, site-packages
    (torch among them) and gnnprof itself."""
    out = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            out.add(paths[key])
    try:
        out.update(site.getsitepackages())
    except AttributeError:  # virtualenvs of old
        pass
    try:
        out.add(site.getusersitepackages())
    except AttributeError:
        pass
    for p in sys.path:
        if p.rstrip("/").endswith(("site-packages", "dist-packages")):
            out.add(p)
    out.add(os.path.dirname(os.path.abspath(__file__)))
    out.update(extra)
    return tuple(sorted(p.rstrip("/") + "/" for p in out if p))


# ---- statement maps ----

_maps = {}  # filename, or (filename, first line) -> (stmt_of: {line: first line}, text_of: {first line: text}, lines)


def _span(node):
    """Lines of a statement's own text: a simple statement's whole extent, a compound
    statement's header (decorators included) up to its first nested statement."""
    start = node.lineno
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        start = min([start] + [d.lineno for d in decorators])
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.AST) and hasattr(body[0], "lineno"):
        return start, node.lineno, max(node.lineno, body[0].lineno - 1)
    return start, node.lineno, node.end_lineno or node.lineno


_NESTED = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree):
    """Statements (and except/case clauses), each before the ones nested in it: an inner
    statement overrides the lines its parent claimed. Expressions are not visited."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        for field in _NESTED:
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                stack.extend(reversed(sub))


def _fill(tree, offset, lines, stmt_of, text_of):
    """The maps from a tree whose line numbers are `offset` below the file's."""
    for node in _statements(tree):
        if isinstance(node, ast.stmt):
            start, head, end = _span(node)
        elif isinstance(node, ast.ExceptHandler) or type(node).__name__ == "match_case":
            start = head = node.lineno if hasattr(node, "lineno") else node.pattern.lineno
            body = node.body
            end = max(head, body[0].lineno - 1) if body else head
        else:
            continue
        start, head, end = start + offset, head + offset, end + offset
        for ln in range(start, end + 1):
            stmt_of[ln] = head
        text = " ".join(l.strip() for l in lines[head - 1:end] if l.strip())
        text_of[head] = re.sub(r"\s+", " ", text)[:400]


def _function_map(filename, lines, first, last):
    """The maps of one function's lines from its own source, dedented, or None when that does
    not parse alone as a function (a multi-line last statement whose closing line holds no
    code, a string less indented than the def): parsing a training loop's function costs a
    fraction of parsing its whole file, on the loop thread at the first optimizer step."""
    seg = lines[first - 1:last]
    if not seg or not seg[0].lstrip().startswith(("def ", "async def ", "@")):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(seg)), filename)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    stmt_of, text_of = {}, {}
    _fill(tree, first - 1, lines, stmt_of, text_of)
    return stmt_of, text_of, lines


def statement_map(filename, first=None, last=None):
    """The statement maps of `filename`, or of its lines first..last (a function's) when given
    and they parse on their own."""
    cached = _maps.get(filename)
    if cached is None and first is not None:
        cached = _maps.get((filename, first))
        if cached is None:
            cached = _function_map(filename, linecache.getlines(filename), first, last)
            if cached is not None:
                _maps[(filename, first)] = cached
    if cached is not None:
        return cached
    lines = linecache.getlines(filename)
    stmt_of, text_of = {}, {}
    try:
        tree = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        tree = None
    if tree is not None:
        _fill(tree, 0, lines, stmt_of, text_of)
    out = (stmt_of, text_of, lines)
    _maps[filename] = out
    return out


def prepare(code):
    """(first line, statement first line per line, line site per line) for a code object."""
    from . import _native

    first = code.co_firstlineno
    last = first
    for _, _, ln in code.co_lines():
        if ln is not None and ln > last:
            last = ln
    stmt_of, text_of, lines = statement_map(code.co_filename, first, last)
    stmts, sites, by_stmt = [], [], {}
    qualname = code.co_qualname
    for ln in range(first, last + 1):
        s = stmt_of.get(ln, ln)
        site = by_stmt.get(s)
        if site is None:
            text = text_of.get(s)
            if text is None:
                text = lines[s - 1].strip() if 0 < s <= len(lines) else ""
            site = by_stmt[s] = _native.line_site(code.co_filename, s, qualname, text)
        stmts.append(s)
        sites.append(site)
    return first, stmts, sites
