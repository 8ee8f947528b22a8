#!/usr/bin/env bash
# gnnprof ab on a tiny command: interleaving, one failed run, env overrides, the comparison's
# keys, bad usage.  usage: ab_test.sh GNNPROF_CLI AB_APP
set -u
cli=$1 app=$2
. "$(dirname "$0")/lib.sh"
json_check() { "$py" -c "import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

# 1. Default form: GNNPROF_PREFETCH=0 vs 2, interleaved B C B C B C.
AB_ORDER="$tmp/order" "$cli" ab --repeat 3 --skip 1 -o "$tmp/ab1" -- "$app" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "ab exit 0" '[ $rc -eq 0 ]'
check "interleaved ABAB order" '[ "$(tr "\n" " " <"$tmp/order")" = "0 2 0 2 0 2 " ]'
check "progress lines" '[ "$(grep -c "^gnnprof ab: \[[1-6]/6\]" "$tmp/err")" -eq 6 ]'
check "a profile and a log per run" '[ "$(ls "$tmp/ab1" | grep -c "^baseline-[123]\.json$")" -eq 3 ] && [ "$(ls "$tmp/ab1" | grep -c "^candidate-[123]\.log$")" -eq 3 ]'
check "comparison schema and sides" 'json_check "$tmp/ab1/comparison.json" "c[\"schema\"] == \"gnnprof.compare/1\" and len(c[\"baseline\"][\"runs\"]) == 3 and c[\"candidate\"][\"env\"] == [\"GNNPROF_PREFETCH=2\"]"'
check "comparison metric keys" 'json_check "$tmp/ab1/comparison.json" "all(k in c[\"metrics\"][0] for k in [\"name\",\"scope\",\"baseline_median_ns\",\"candidate_median_ns\",\"delta_ns\",\"ratio\",\"ci_low\",\"ci_high\",\"p_value\",\"verdict\"])"'
check "iteration first, work stage present" 'json_check "$tmp/ab1/comparison.json" "c[\"metrics\"][0][\"name\"] == \"iteration\" and any(m[\"name\"] == \"work\" for m in c[\"metrics\"])"'
# Candidate spins 900 us vs 300 us per iteration: slower, significantly.
check "verdict: candidate slower" 'json_check "$tmp/ab1/comparison.json" "c[\"headline\"][\"verdict\"] == \"slower\" and c[\"headline\"][\"speedup\"] < 0.5"'
check "text table on stdout" 'grep -q "^iteration  *loop " "$tmp/out" && grep -q "^Headline: " "$tmp/out"'

# 2. Shell form, one candidate run fails: reported with exit code and log tail, exit 1,
#    the comparison still made from the usable runs, and every profile kept.
fail_once="if [ -e $tmp/once ]; then $app; else touch $tmp/once; echo boom-from-run >&2; exit 3; fi"
"$cli" ab --repeat 3 --skip 1 -o "$tmp/ab2" --baseline "$app" --candidate "$fail_once" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "failed run: exit 1" '[ $rc -eq 1 ]'
check "failed run: exit code reported" 'grep -q "candidate run 1/3 .*FAILED: exit code 3" "$tmp/err"'
check "failed run: stderr tail shown" 'grep -q "| boom-from-run" "$tmp/err"'
check "failed run: comparison still written" 'json_check "$tmp/ab2/comparison.json" "c[\"candidate\"][\"runs\"][0][\"exit_code\"] == 3 and c[\"candidate\"][\"runs\"][1][\"error\"] == \"\""'
check "failed run: other profiles kept" '[ -s "$tmp/ab2/baseline-1.json" ] && [ -s "$tmp/ab2/candidate-2.json" ] && [ ! -e "$tmp/ab2/candidate-1.json" ]'

# 3. --baseline-env / --candidate-env override the defaults.
rm -f "$tmp/order"
AB_ORDER="$tmp/order" "$cli" ab --repeat 2 --skip 0 -o "$tmp/ab3" --baseline-env GNNPROF_PREFETCH=1 --candidate-env AB_EXIT=0 -- "$app" >/dev/null 2>&1; rc=$?
check "env override exit 0" '[ $rc -eq 0 ]'
check "env override order" '[ "$(tr "\n" " " <"$tmp/order")" = "1 2 1 2 " ]'

# 4. A wrapper: every process writes its own profile; the launch's busiest stands for the run
#    (it was overwritten by the last process to exit), and a run without iterations fails.
"$cli" ab --repeat 1 --skip 1 -o "$tmp/ab5" --baseline "$app" --candidate "$app; AB_ITERS=2 $app" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "wrapper: exit 0" '[ $rc -eq 0 ]'
check "wrapper: the busiest process's profile" 'json_check "$tmp/ab5/candidate-1.json" "len(c[\"iterations\"]) == 10"'
check "wrapper: the other process's profile kept beside it" '[ "$(ls "$tmp/ab5" | grep -c "^candidate-1\.[0-9]*\.json$")" -eq 1 ]'
AB_ITERS=0 "$cli" ab --repeat 2 --skip 1 -o "$tmp/ab6" -- "$app" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "no iterations: FAILED, exit 1" '[ $rc -eq 1 ] && grep -q "FAILED: its profile .*has no complete iteration" "$tmp/err"'

"$cli" ab --repeat 3 -o "$tmp/ab7" --baseline true --candidate true >"$tmp/out" 2>"$tmp/err"; rc=$?
check "no profile without --preload: stops after the first run" '[ $rc -eq 1 ] && [ "$(grep -c "^gnnprof ab: \[" "$tmp/err")" -eq 1 ] && grep -q "stopping: without --preload" "$tmp/err"'

# 5. Bad usage: one line, exit 2.
"$cli" ab -o "$tmp/ab4" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "no command: exit 2, one line" '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]'
"$cli" ab -o "$tmp/ab4" --baseline-env NOEQUALS -- "$app" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "bad env: exit 2" '[ $rc -eq 2 ] && grep -q "bad environment setting \"NOEQUALS\"" "$tmp/err"'
"$cli" ab -o "$tmp/ab4" --baseline "$app" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "baseline without candidate: exit 2" '[ $rc -eq 2 ]'
exit $fail
