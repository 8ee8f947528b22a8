"""When the package loaded gnnprof's library itself (no `gnnprof run`), that library cannot see
Python load torch: the package tells it once torch is imported, so that torch's ops are
observed."""
import importlib.abc
import importlib.util
import sys


class _TorchWatcher(importlib.abc.MetaPathFinder):
    def __init__(self, attach):
        self.attach = attach
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader, attach, watcher = spec.loader, self.attach, self

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                try:
                    loader.exec_module(module)
                finally:
                    if watcher in sys.meta_path:
                        sys.meta_path.remove(watcher)
                    attach()

        spec.loader = _Loader()
        return spec


def watch_torch(attach):
    if "torch" in sys.modules:
        attach()
    elif not any(type(f).__name__ == "_TorchWatcher" for f in sys.meta_path):  # once (a reloaded package)
        sys.meta_path.insert(0, _TorchWatcher(attach))
