# gnnprof's sitecustomize: `gnnprof run` puts this directory first on PYTHONPATH (the convention of
# opentelemetry-instrument and ddtrace-run). It imports gnnprof (which joins the injected session
# and sets up line tracing), puts `profile` in builtins as `kernprof -b` does, then runs the
# sitecustomize that would have run without gnnprof, if any. Python 2 parses it too (a child
# process of an old interpreter): there only the program's own sitecustomize runs.
def _gnnprof_bootstrap():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    if sys.version_info[0] >= 3:
        try:
            import gnnprof
            import builtins
            if not hasattr(builtins, "profile"):
                builtins.profile = gnnprof.profile
        except Exception as e:  # never stop the program: say why once
            sys.stderr.write("gnnprof: the Python package did not load (%s: %s); lines are not traced\n"
                             % (type(e).__name__, e))
    # The user's (or the distribution's) sitecustomize, found on the path without this directory.
    saved = sys.modules.pop("sitecustomize", None)
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        if sys.version_info[0] >= 3:
            import importlib.util
            from importlib.machinery import PathFinder
            spec = PathFinder.find_spec("sitecustomize", path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules["sitecustomize"] = module
                spec.loader.exec_module(module)
                return
        else:
            import imp
            try:
                found = imp.find_module("sitecustomize", path)
            except ImportError:
                found = None
            if found is not None:
                try:
                    imp.load_module("sitecustomize", *found)
                finally:
                    if found[0] is not None:
                        found[0].close()
                return
    except Exception:
        import traceback
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n")
        traceback.print_exc()
    if saved is not None:
        sys.modules["sitecustomize"] = saved


_gnnprof_bootstrap()
del _gnnprof_bootstrap
