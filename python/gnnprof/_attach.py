"""Calls after a module is imported: when the package loaded gnnprof's library itself (no
`gnnprof run`), that library cannot see Python load torch, so the package tells it once torch
is imported; and multiprocessing's process class is wrapped when it is imported (gnnprof's
DataLoader workers under spawn and forkserver)."""
import functools
import importlib.abc
import importlib.util
import sys


def _key(then):
    """What names a callback across reloads of the package (whose functions are new objects)."""
    return getattr(then, "__module__", None), getattr(then, "__qualname__", None) or repr(then)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    def __init__(self, name, then):
        self.name = name
        self.thens = [then]
        self.busy = False

    def add(self, then):
        if all(_key(t) != _key(then) for t in self.thens):
            self.thens.append(then)

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader, watcher = spec.loader, self

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                try:
                    loader.exec_module(module)
                finally:
                    if watcher in sys.meta_path:
                        sys.meta_path.remove(watcher)
                    for then in watcher.thens:
                        try:
                            then()
                        except Exception:  # never into the host's import
                            pass

        spec.loader = _Loader()
        return spec


def after_import(name, then):
    """then() now if `name` is imported, else right after its import, once (a reloaded package
    does not watch twice: callbacks are told apart by module and qualified name)."""
    if name in sys.modules:
        try:
            then()
        except Exception:  # never into the host
            pass
        return
    for f in sys.meta_path:
        if getattr(f, "name", None) == name and type(f).__name__ == "_ImportWatcher":
            if hasattr(f, "add"):
                f.add(then)
            return
    sys.meta_path.insert(0, _ImportWatcher(name, then))


def method_to_wrap(module, cls_name, name, missing):
    """(cls, original, None) for the method `name` that class `cls_name` of the imported module
    `module` defines itself; (None, None, missing) where there is none, and (None, None,
    "installed") where gnnprof's wrapper is there already (a reloaded package, a forked process)."""
    mod = sys.modules.get(module)
    cls = getattr(mod, cls_name, None) if mod is not None else None
    original = cls.__dict__.get(name) if isinstance(cls, type) else None
    if original is None:
        return None, None, missing
    if getattr(original, "_gnnprof", False):
        return None, None, "installed"
    return cls, original, None


def wrap_each(module, cls_name, names, make):
    """Each method of `names` that class `cls_name` of the imported `module` defines itself,
    replaced by make(original) (once: one already gnnprof's is left as it is)."""
    for name in names:
        cls, original, _ = method_to_wrap(module, cls_name, name, None)
        if cls is not None:
            replace_method(cls, name, make(original), original)


def replace_method(cls, name, wrapper, original):
    """Puts `wrapper` in place of `original` as cls.<name>: it looks like the original (name,
    qualname, doc, `__wrapped__`) and is marked gnnprof's (`_gnnprof`), so that a reloaded
    package or a forked process finds it installed."""
    functools.update_wrapper(wrapper, original)
    wrapper._gnnprof = True
    setattr(cls, name, wrapper)
