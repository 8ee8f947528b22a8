"""GNNPROF_* variables through gnnprof's one table (profiler/config.*, docs/configuration.md):
the library parses them and warns once per bad value; the package keeps no second copy of
those rules."""
import ctypes
import os
import sys

_warned = set()


def _process_abi():
    """gnnprof's C ABI when this process already has it (gnnprof run), else None."""
    try:
        lib = ctypes.CDLL(None)
        f = lib.gnnprof_config_count_or
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_ulonglong
    f.argtypes = (ctypes.c_char_p, ctypes.c_ulonglong)
    return lib


def _native():
    import gnnprof
    return gnnprof._native if gnnprof._state["bound"] else None


def _unread(name, default):
    """Without gnnprof's library (a Python whose ABI the module lacks, outside gnnprof run)."""
    if os.environ.get(name) and name not in _warned:
        _warned.add(name)
        sys.stderr.write(f"gnnprof: {name} is not read (gnnprof's library is not loaded in this Python); "
                         f"using {default}\n")
    return default


def count(name, default):
    """A count variable whose default is the caller's: the value, else `default`."""
    native = _native()
    if native is not None:
        return native.config_count(name, default)
    lib = _process_abi()
    if lib is not None:
        return int(lib.gnnprof_config_count_or(name.encode(), default))
    return _unread(name, default)


def flag(name, default):
    """A bool variable: the value, else the table's default (`default` without the library)."""
    native = _native()
    return native.config_bool(name) if native is not None else _unread(name, default)


def string(name, default):
    """A text variable: the value, else the table's default (`default` without the library)."""
    native = _native()
    return native.config_string(name) if native is not None else _unread(name, default)
