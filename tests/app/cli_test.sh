#!/usr/bin/env bash
# The CLI on good and bad input: one line naming the file and the problem, exit 2.
# usage: cli_test.sh GNNPROF_CLI DEMO_LOOP
set -u
cli=$1 demo=$2
. "$(dirname "$0")/lib.sh"
exact_line_exit2() {  # name, the exact stderr line after "gnnprof: ", args...
  local name=$1 want=$2; shift 2
  "$cli" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ]"
  check "$name: exactly \"gnnprof: $want\"" '[ "$(cat "$tmp/err")" = "gnnprof: $want" ]'
}
one_line_exit2() {  # name, expected-substring, args...
  local name=$1 want=$2; shift 2
  "$cli" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ]"
  check "$name: one line" '[ "$(wc -l <"$tmp/err")" -eq 1 ]'
  check "$name: message" 'grep -qF -- "$want" "$tmp/err"'
}

GNNPROF_QUIET=1 "$demo" --iterations 20 --profile "$tmp/demo.json" >/dev/null
check "demo profile written" '[ -s "$tmp/demo.json" ]'
"$cli" report "$tmp/demo.json" >"$tmp/report" 2>&1; rc=$?
check "report exit 0" '[ $rc -eq 0 ]'
for want in "Timer unit: 1e-06 s" "Total time:" "File: " "Function: main at line" \
            "Line #      Hits         Time  Per Hit   % Time  Line Contents" \
            "(unattributed)" "iterations analyzed" "Events: " "Collectors: host (on)"; do
  check "report shows '$want'" 'grep -qF -- "$want" "$tmp/report"'
done
check "report's iterations: 20, or those after a detected warm-up" \
  'grep -qE "^(20 complete iterations|[0-9]+ iterations after the warm-up)" "$tmp/report"' 
for s in sample materialize forward backward optimizer; do
  check "stage $s in report" 'grep -q "^$s " "$tmp/report"'
done
# Phases first: on the recorded GAT profile, --ops and --top-ops nest ops under their phase;
# compare --ops lists op metrics, the default one line on them.
gat="$(dirname "$0")/../data/gat_profile.json"
"$cli" report "$gat" --stages >"$tmp/gat" 2>&1
check "report: no op rows by default" '! grep -q "^    " "$tmp/gat" && ! grep -q "aten::" "$tmp/gat"'
"$cli" report "$gat" --stages --ops --top-ops 3 >"$tmp/gat_ops" 2>&1
check "report --ops --top-ops 3: 3 ops and 'other ops' under backward" \
  '[ "$(sed -n "/^backward /,/^forward /p" "$tmp/gat_ops" | grep -c "^    ")" -eq 4 ] && grep -q "^    other ops (18) " "$tmp/gat_ops"'
"$cli" compare "$gat" "$gat" >"$tmp/cmp" 2>&1
check "compare: one line on the ops" 'grep -q "torch op metrics (0 slower, 0 faster); \`--ops\` lists them" "$tmp/cmp" && ! grep -q "aten::" "$tmp/cmp"'
"$cli" compare "$gat" "$gat" --ops >"$tmp/cmp_ops" 2>&1
check "compare --ops: ops under their phase" 'grep -q "^  SoftmaxBackward0 " "$tmp/cmp_ops"'
"$cli" report "$tmp/demo.json" --json "$tmp/again.json" >/dev/null 2>&1
# --json writes the same profile plus the diagnostics of the analysis.
check "--json rewrites the profile, adding diagnostics" '/usr/bin/python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
d = b.pop(\"diagnostics\"); a.pop(\"diagnostics\")
sys.exit(0 if a == b and isinstance(d, list) else 1)" "$tmp/demo.json" "$tmp/again.json"'

exact_line_exit2 "a word that is no command" "unknown command 'reprot' (commands: report, ab, compare, check, run, merge, env, version)" reprot x.json
one_line_exit2 "an option report does not have" "(see gnnprof report --help)" report -o "$tmp/x.html" "$tmp/demo.json"
one_line_exit2 "missing file" "$tmp/nope.json: cannot open: No such file or directory" report "$tmp/nope.json"
head -c 500 "$tmp/demo.json" >"$tmp/trunc.json"
one_line_exit2 "truncated file" "$tmp/trunc.json: truncated JSON" report "$tmp/trunc.json"
echo '{"traceEvents": []}' >"$tmp/foreign.json"
one_line_exit2 "foreign file" "$tmp/foreign.json: not a gnnprof profile" report "$tmp/foreign.json"
cp "$cli" "$tmp/binary.json"
exact_line_exit2 "binary file" "$tmp/binary.json: not a JSON file (malformed at byte 1)" report "$tmp/binary.json"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$tmp/passwd"
exact_line_exit2 "text file" "$tmp/passwd: not a JSON file (malformed at byte 1)" report "$tmp/passwd"
mkdir -p "$tmp/adir"
exact_line_exit2 "directory" "$tmp/adir: is a directory, not a profile file" report "$tmp/adir"
exact_line_exit2 "JSON, not a profile" "$tmp/foreign.json: not a gnnprof profile (no \"schema\" key)" report "$tmp/foreign.json"
one_line_exit2 "unknown flag" "gnnprof: " report "$tmp/demo.json" --no-such-flag
one_line_exit2 "no subcommand" "gnnprof: " 
cp "$tmp/demo.json" "$tmp/keep.json"
"$cli" report "$tmp/demo.json" --json /nonexistent-dir/x.json >/dev/null 2>"$tmp/err"; rc=$?
check "unwritable --json exits 1" '[ $rc -eq 1 ]'
check "unwritable --json names it" 'grep -qF "cannot write /nonexistent-dir/x.json" "$tmp/err"'
one_line_exit2 "report of a device (read forever before)" "/dev/zero: is a device, not a profile file" report /dev/zero
: > "$tmp/empty.json"
one_line_exit2 "compare of one empty file" "$tmp/empty.json: empty file" compare "$tmp/empty.json"
GNNPROF_FLUSH_INTERVAL_MS=abc "$cli" run -o "$tmp/bad_env.json" -- true >/dev/null 2>"$tmp/err"
check "run names a bad GNNPROF_* value (its processes run quiet)" 'grep -q "^gnnprof run: ignoring GNNPROF_FLUSH_INTERVAL_MS=abc" "$tmp/err"'
one_line_exit2 "run into a directory no file can be made in" "gnnprof run: cannot write in the output directory /proc" run -o /proc/x.json -- true
check "--help exits 0" '"$cli" report --help >/dev/null'
check "--version" '"$cli" --version | grep -q "^gnnprof 0\."'
# gnnprof env: the config table, with values that would be ignored flagged; docs/configuration.md
# holds its Markdown verbatim.
GNNPROF_BUFFER_EVENTS=lots GNNPROF_CLOCK=monotonic "$cli" env >"$tmp/env.txt" 2>&1; rc=$?
check "env exits 0" '[ $rc -eq 0 ]'
check "env shows a set value" 'grep -q "^GNNPROF_CLOCK  *= monotonic$" "$tmp/env.txt"'
check "env flags a bad value" 'grep -q "^GNNPROF_BUFFER_EVENTS  *= lots  (not valid: the default is used)$" "$tmp/env.txt"'
"$cli" env --markdown >"$tmp/env.md"
check "docs/configuration.md holds gnnprof env --markdown verbatim" \
  'python3 -c "import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())" "$tmp/env.md" "$(dirname "$0")/../../docs/configuration.md"'
exit $fail
