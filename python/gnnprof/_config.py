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


def warn(name, value, expected, using):
    """One warning for a bad value, through the library's warning (once per name) when present."""
    lib = _process_abi()
    if lib is not None:
        try:
            lib.gnnprof_config_warn(name.encode(), str(value).encode(), expected.encode(), str(using).encode())
            return
        except (AttributeError, OSError):
            pass
    if name not in _warned:
        _warned.add(name)
        sys.stderr.write(f"gnnprof: {name}={value}: expected {expected}; using {using}\n")


def loader_workers():
    """GNNPROF_LOADER_WORKERS: how many of the run's DataLoader workers write a profile. A count;
    on/true/yes (its earlier boolean spelling) mean the default 16, off/false/no/none 0."""
    raw = string("GNNPROF_LOADER_WORKERS", "16").strip().lower()
    if raw in ("", "on", "true", "yes"):
        return 16
    if raw in ("off", "false", "no", "none"):
        return 0
    if raw.isdigit():
        return int(raw)
    warn("GNNPROF_LOADER_WORKERS", raw, "a count (or on/off)", 16)
    return 16


def string(name, default):
    """A text variable: the value, else the table's default (`default` without the library)."""
    native = _native()
    return native.config_string(name) if native is not None else _unread(name, default)
