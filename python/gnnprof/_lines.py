"""Which code objects gnnprof traces line by line, and their statement maps.

Selection (GNNPROF_LINES, `gnnprof run --lines`, `python3 -m gnnprof --lines`):
    auto            the training loop (the user frame that calls the optimizer's step, and the
                    loop above it when that frame is a helper outside any loop), the user
                    generators it pulls batches from, and the user code a data loader calls
                    for it (a Dataset's __getitem__, a collate_fn, a DGL sampler) (the default)
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

# Data-loader libraries, as path fragments: user code that their frames call while they run for
# the loop (within a few library frames of it) is the loop's data pipeline.
LOADERS = ("/torch/utils/data/", "/torch_geometric/loader/", "/torch_geometric/sampler/", "/dgl/dataloading/",
           "/dgl/graphbolt/")
# In a process pool's worker process (a producer of the program's own), the pool's code too: the
# functions the program gives the pool are what that process runs for the loop.
POOLS = ("/multiprocessing/pool.py", "/concurrent/futures/process.py")

# Third-party packages, as path fragments, and those among them that are no framework (the
# start of the path after the last such fragment: a venv at /opt/torch/.venv holds Lightning):
# when the optimizer's step is called through a framework's code (Lightning, skorch), the user
# code that framework calls back while the loop runs (a training_step, a module's forward) is traced.
FRAMEWORKS = ("/site-packages/", "/dist-packages/")
NOT_FRAMEWORKS = ("torch/", "functorch/", "gnnprof/")

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

    def file_known(self):
        """Whether the spec's file exists (a path) or a module or the script of that name was
        loaded (a base name): tells a typo in the file from a function that never ran."""
        if self.by_path:
            return os.path.exists(self.path)
        names = [getattr(m, "__file__", None) for m in list(sys.modules.values())] + [sys.argv[0] if sys.argv else None]
        return any(isinstance(f, str) and os.path.basename(f) == self.file for f in names)

    def matches(self, filename, name, qualname, realpath):
        """qualname: a string, or a function of no arguments giving it (computed on demand)."""
        if self.by_path:
            if realpath(filename) != self.path:
                return False
        elif os.path.basename(filename) != self.file:
            return False
        if self.func is None:
            # A whole file: its functions and module code, not the comprehensions and lambdas
            # inside their lines (whose time those lines already hold).
            return not name.startswith("<") or name == "<module>"
        if name == self.func:
            return True
        if callable(qualname):
            qualname = qualname()
        return qualname == self.func or qualname.endswith("." + self.func)


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
        # A whole file's spec means its functions and, for the script itself, its top-level
        # code; not an imported module's top level or a class body (definitions run once,
        # whose blocks would only list the methods' source with no hits).
        definitions = code.co_name != "<module>" and not code.co_flags & 0x2  # no CO_NEWLOCALS: a class body
        if code.co_name == "<module>":
            main = getattr(sys.modules.get("__main__"), "__file__", None)
            definitions = main is None or self._realpath(main) != self._realpath(code.co_filename)
        for s in self.specs:
            if definitions and s.func is None:
                continue
            if s.matches(code.co_filename, code.co_name, lambda: qualname(code), self._realpath):
                s.matched = True
                hit = True
        return hit


def library_prefixes(extra=()):
    """Path prefixes of code that is not the user's: the standard library, site-packages
    (torch among them) and gnnprof itself."""
    # The standard library: where os came from (sysconfig says the same, at 60 KiB of the host's
    # heap); sysconfig only where os is frozen without a path, as some embeddings do.
    if getattr(os, "__file__", None):
        out = {os.path.dirname(os.__file__)}
    else:
        import sysconfig
        out = {sysconfig.get_paths()["stdlib"]}
    version = "python%d.%d" % sys.version_info[:2]
    # platstdlib (lib64/ on some distributions; in a venv, under its own prefix)
    for prefix in {sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix}:
        out.add(os.path.join(prefix, getattr(sys, "platlibdir", "lib"), version))
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

_maps = {}  # filename -> maps of the file; (filename, first line) -> maps of a function's lines
_spans = {}  # filename -> [(first, last)] of its cached function maps

# One scan of the source finds its logical lines (what Python's tokenizer ends with NEWLINE):
# strings (triple-quoted included), comments, brackets and backslash continuations are all
# that decide where a statement ends. It gives what an ast walk gives (tests compare the two
# over the standard library) at a fraction of the cost, on the loop thread at the first step.
_TOKEN = re.compile(
    r"(?P<str>(?i:[rbuf]{0,2})(?:'{3}(?:\\.|[^\\])*?'{3}|\"{3}(?:\\.|[^\\])*?\"{3}"
    r"|'(?:\\.|[^\\'\n])*'|\"(?:\\.|[^\\\"\n])*\"))"
    r"|(?P<com>#[^\n]*)"
    r"|(?P<open>[(\[{])"
    r"|(?P<close>[)\]}])"
    r"|(?P<cont>\\\n)"
    r"|(?P<nl>\n)"
    r"|(?P<code>[^\s#'\"()\[\]{}\\][^\n#'\"()\[\]{}\\]*)"
    r"|(?P<bad>['\"\\])", re.DOTALL)
_COMPOUND = re.compile(r"(if|elif|else|while|for|with|def|class|try|except|finally|async|match|case)\b")
_NO_NODE = re.compile(r"(else|finally)\s*:\s*$")  # headers the ast has no node for
_HEAD_COLON = re.compile(r":(?!=)")


def _logical_lines(text, stop=None):
    """[(start, end, first token, last token, line of the first top-level ':')] of the logical
    lines in `text` (line numbers from 1); with `stop`, up to the first that starts after line
    `stop` and is no decorator, cut to its first token; None where the text does not scan (an
    unterminated string)."""
    out = []
    line, depth, start, first, last, colon = 1, 0, None, None, None, None
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            if start is not None and depth == 0:
                out.append((start, line, first, last, colon))
                start = None
            line += 1
        elif kind == "cont":
            line += 1
        elif kind == "bad":
            return None
        elif kind != "com":
            tok = m.group()
            if start is None:
                if stop is not None and line > stop and not tok.startswith("@"):
                    out.append((line, line, tok, tok, None))  # the one after: where a header's lines end
                    return out
                start, first, colon = line, tok, None
            last = tok
            if kind == "code":
                if depth == 0 and colon is None and _HEAD_COLON.search(tok):
                    colon = line
            elif kind == "open":
                depth += 1
            elif kind == "close":
                depth = max(0, depth - 1)
            else:
                line += tok.count("\n")
    if start is not None:
        out.append((start, line, first, last, colon))
    return out


def _scan_map(lines, offset=0, stop=None):
    """(stmt_of, text_of) of `lines` (lines[0] is line offset + 1), or None where they do not scan.
    A statement's lines (a compound statement's header up to its body, decorators included) go
    to its first line; its text is those lines joined."""
    logical = _logical_lines("".join(lines), stop)
    if logical is None:
        return None
    heads, after = [0] * len(logical), None
    for i in range(len(logical) - 1, -1, -1):  # decorators belong to the def after them
        start, first = logical[i][0], logical[i][2]
        decorator = first.startswith("@")
        heads[i] = after if decorator and after is not None else start
        if not decorator:
            after = start
    stmt_of, text_of = {}, {}

    def put(head, end):
        for ln in range(head, end + 1):
            stmt_of[ln + offset] = head + offset
        text = " ".join(l.strip() for l in lines[head - 1:end] if l.strip())
        text_of[head + offset] = re.sub(r"\s+", " ", text)[:400]

    for i, (start, end, first, last, colon) in enumerate(logical):
        head = heads[i]
        if head != start:  # a decorator: its lines up to the def's
            for ln in range(start, head):
                stmt_of[ln + offset] = head + offset
            continue
        if not _COMPOUND.match(first):
            put(head, end)
        elif last.rstrip().endswith(":"):
            if _NO_NODE.match(first):
                continue
            # The header, and the comment lines between it and its body.
            put(head, max(end, heads[i + 1] - 1) if i + 1 < len(logical) else end)
        elif colon is not None and colon > head:  # a header over lines, its body after the ':'
            put(head, colon - 1)
            put(colon, end)
        else:
            put(head, end)
    return stmt_of, text_of


def _case_line(lines, case):
    """The line of a match_case's `case` keyword: its pattern may start below it (`case (`)."""
    ln = case.pattern.lineno
    while ln > 1 and not re.match(r"case(?![\w.])", lines[ln - 1].lstrip()):
        ln -= 1
    return ln


def _span(node, lines):
    """Lines of a statement's own text (the ast reference for the tests): a simple statement's
    whole extent, a compound statement's header (decorators included) up to its first nested
    statement."""
    start = node.lineno
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        start = min([start] + [d.lineno for d in decorators])
    if type(node).__name__ == "Match" and node.cases:  # a match: its header alone
        return start, node.lineno, max(node.lineno, _case_line(lines, node.cases[0]) - 1)
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.AST):
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


def _ast_map(lines, filename):
    """The same maps from Python's ast: the fallback where the scan fails, and the tests'
    reference. An inner statement overrides the lines its parent claimed."""
    stmt_of, text_of = {}, {}
    try:
        tree = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return stmt_of, text_of
    for node in _statements(tree):
        if isinstance(node, ast.stmt):
            start, head, end = _span(node, lines)
        elif isinstance(node, ast.ExceptHandler) or type(node).__name__ == "match_case":
            start = head = node.lineno if hasattr(node, "lineno") else _case_line(lines, node)
            body = node.body
            end = max(head, body[0].lineno - 1) if body else head
        else:
            continue
        for ln in range(start, end + 1):
            stmt_of[ln] = head
        text = " ".join(l.strip() for l in lines[head - 1:end] if l.strip())
        text_of[head] = re.sub(r"\s+", " ", text)[:400]
    return stmt_of, text_of


def _function_map(filename, lines, first, last):
    """The maps of one function's lines first..last (its def, or first decorator, to its last
    line of code), scanned from there to the end of the statement on line `last`: a training
    loop's function costs a fraction of its whole file. None where line `first` starts no def
    or class (a comprehension's or lambda's code starts inside a statement): its file then."""
    if not 0 < first <= len(lines) or not lines[first - 1].lstrip().startswith(("def ", "async def ", "@", "class ")):
        return None
    m = _scan_map(lines[first - 1:], first - 1, last - first + 1)
    return None if m is None else (m[0], m[1], lines)


def statement_map(filename, first=None, last=None):
    """The statement maps of `filename`, or of a function's lines first..last when given."""
    cached = _maps.get(filename)
    if cached is not None:
        return cached
    if first is not None:
        cached = _maps.get((filename, first))
        if cached is None:
            # A comprehension or lambda inside a function already mapped: that function's map.
            for lo, hi in _spans.get(filename, ()):
                if lo < first and last <= hi:
                    return _maps[(filename, lo)]
            cached = _function_map(filename, linecache.getlines(filename), first, last)
            if cached is not None:
                _maps[(filename, first)] = cached
                _spans.setdefault(filename, []).append((first, last))
        if cached is not None:
            return cached
    lines = linecache.getlines(filename)
    m = _scan_map(lines) or _ast_map(lines, filename)
    out = (m[0], m[1], lines)
    _maps[filename] = out
    return out


def qualname(code):
    """A code object's qualified name: co_qualname, which CPython 3.10 lacks (qualname_at)."""
    q = getattr(code, "co_qualname", None)
    return q if q is not None else qualname_at(code.co_filename, code.co_firstlineno, code.co_name, code.co_code)


_COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")
_qualnames = {}  # filename -> {(first line, name[, bytecode]): qualified name}


def qualname_at(filename, first, name, bytecode=None):
    """The qualified name of the code named `name` that begins at line `first` of `filename`
    (and has that bytecode: two comprehensions of one line differ there), as the compiler gives
    it (Class.method, outer.<locals>.inner), from a compile of the file; `name` where that
    fails."""
    names = _qualnames.get(filename)
    if names is None:
        names = _qualnames[filename] = {}
        try:
            top = compile("".join(linecache.getlines(filename)), filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            top = None
        todo = [(top, "")] if top is not None else []
        while todo:
            co, prefix = todo.pop(0)
            declared = _stored_globals(co) if prefix else ()
            for c in co.co_consts:
                if type(c) is type(co):
                    # a def or class of a name declared `global` in a function or class body is
                    # named as at the top level
                    q = c.co_name if c.co_name in declared else prefix + c.co_name
                    names.setdefault((c.co_firstlineno, c.co_name), q)
                    names[(c.co_firstlineno, c.co_name, c.co_code)] = q
                    # a function's (or lambda's) own names are its locals; not a class body's or a
                    # comprehension's (the compiler's rule)
                    local = c.co_flags & 0x2 and c.co_name not in _COMPREHENSIONS  # CO_NEWLOCALS
                    if c.co_name.startswith("<generic parameters of "):  # 3.12's type-parameter scope
                        todo.append((c, prefix))  # adds nothing to its def's or class's name
                    else:
                        todo.append((c, q + (".<locals>." if local else ".")))
    q = names.get((first, name, bytecode)) if bytecode is not None else None
    return q if q is not None else names.get((first, name), name)


def _stored_globals(code):
    """The names a code object stores as globals (declared `global` there)."""
    import dis
    return {i.argval for i in dis.get_instructions(code) if i.opname == "STORE_GLOBAL"}


def with_exits(code):
    """Byte offsets where a `with` block leaves normally, calling __exit__(None, None, None):
    CPython reports the `with` line again there (3.10-3.13), which is no new execution of it
    (line_profiler counts one hit per `with`). The call's shape: three Nones (3.10: one, twice
    duplicated) and a call of two arguments (3.10: three) on the bound __exit__."""
    import dis

    try:
        ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "PRECALL")]
    except Exception:  # never into the host: no exits known, one hit per line event
        return []
    out = []
    for k in range(len(ins) - 3):
        a, b, c, d = ins[k:k + 4]
        if a.opname != "LOAD_CONST" or a.argval is not None:
            continue
        none = [x.opname == "LOAD_CONST" and x.argval is None for x in (b, c)]
        if all(none) and d.opname == "CALL" and d.arg == 2:
            out.append(a.offset)
        elif b.opname == "DUP_TOP" and c.opname == "DUP_TOP" and d.opname == "CALL_FUNCTION" and d.arg == 3:
            out.append(a.offset)
    return out


def prepare(code):
    """(first line, statement first line per line, line site per line, the byte offsets where a
    `with` block leaves) for a code object."""
    from . import _native

    first = code.co_firstlineno
    last = first
    for _, _, ln in code.co_lines():
        if ln is not None and ln > last:
            last = ln
    stmt_of, text_of, lines = statement_map(code.co_filename, first, last)
    stmts, sites, by_stmt = [], [], {}
    qualified = qualname(code)
    for ln in range(first, last + 1):
        s = stmt_of.get(ln, ln)
        site = by_stmt.get(s)
        if site is None:
            text = text_of.get(s)
            if text is None:
                text = lines[s - 1].strip() if 0 < s <= len(lines) else ""
            site = by_stmt[s] = _native.line_site(code.co_filename, s, qualified, text)
        stmts.append(s)
        sites.append(site)
    return first, stmts, sites, with_exits(code)
