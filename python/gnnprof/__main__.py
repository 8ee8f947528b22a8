"""python3 -m gnnprof [gnnprof run options] script.py ARGS  (or -m module ARGS)

Does what `gnnprof run [options] -- python3 script.py ARGS` does, with this interpreter:
the profile, the report files, the script's output and exit code. Options:
    -o, --output FILE     profile of the script's process (default gnnprof.json)
    --html FILE           also its HTML report
    --lines SPEC          line tracing: auto (default), none, FILE or FILE:FUNCTION; repeatable

python3 -m gnnprof report|compare|check|merge|ab|env|version ARGS  runs that gnnprof command
(e.g. `python3 -m gnnprof report gnnprof.json` prints the report), unless a file of that name
exists, which is run as a script.
"""
import os
import sys

from . import _paths


COMMANDS = ("report", "compare", "check", "merge", "ab", "env", "version")


def main(argv):
    cli = _paths.CLI
    if argv and argv[0] in COMMANDS and not os.path.exists(argv[0]):
        if not os.access(cli, os.X_OK):
            print(f"gnnprof: cannot find the gnnprof executable at {cli}", file=sys.stderr)
            return 2
        os.execv(cli, [cli, *argv])
    opts, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a in ("-o", "--output", "--html", "--lines"):
            if i + 1 >= len(argv):
                print(f"gnnprof: {a} needs a value", file=sys.stderr)
                return 2
            opts += [a, argv[i + 1]]
            i += 2
            continue
        if a.startswith(("--output=", "--html=", "--lines=")):
            opts.append(a)
            i += 1
            continue
        if a == "-m":
            if i + 1 >= len(argv):
                print("gnnprof: -m needs a module", file=sys.stderr)
                return 2
            target = ["-m"] + argv[i + 1:]
            break
        if a == "--":
            target = argv[i + 1:]
            break
        if a.startswith("-"):
            print(f"gnnprof: unknown option {a} (python3 -m gnnprof --help)", file=sys.stderr)
            return 2
        target = argv[i:]
        break
    else:
        target = []
    if not target:
        print("gnnprof: no script given (python3 -m gnnprof [options] script.py ARGS)", file=sys.stderr)
        return 2
    if not os.access(cli, os.X_OK):
        print(f"gnnprof: cannot find the gnnprof executable at {cli}", file=sys.stderr)
        return 2
    os.execv(cli, [cli, "run", *opts, "--", sys.executable, *target])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
