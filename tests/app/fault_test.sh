#!/usr/bin/env bash
# Faults in a profiled program: its fate is its own (same exit status with and without
# gnnprof), nothing hangs, and no profile is left half-written: the output path holds the
# previous complete profile or a new complete one. Faults: fork with collector locks busy,
# exec, SIGTERM, SIGKILL, SIGSEGV, disk full (a small tmpfs, filled; skipped where mount fails).
# usage: fault_test.sh FAULT_APP GNNPROF_CLI
set -u
app=$1 cli=$2
. "$(dirname "$0")/lib.sh"
complete() { "$cli" report "$1" --stages >/dev/null 2>&1; }
# A previous complete profile at the output path: a fault must never leave less than this.
GNNPROF_OUTPUT="$tmp/previous.json" GNNPROF_QUIET=1 "$app" exec >/dev/null 2>&1
GNNPROF_OUTPUT="$tmp/previous.json" GNNPROF_QUIET=1 timeout 60 "$app" fork >/dev/null 2>&1
check "a previous profile exists" 'complete "$tmp/previous.json"'
fresh() { cp "$tmp/previous.json" "$tmp/out.json"; }
status_of() {  # mode env... -> exit status
  local mode=$1; shift
  env "$@" timeout 60 "$app" "$mode" >"$tmp/stdout" 2>"$tmp/stderr"; echo $?
}

# fork with collector locks in use by another thread: no child hangs, the parent's profile is
# written once, by the parent.
fresh
rc=$(status_of fork GNNPROF_OUTPUT="$tmp/out.json" GNNPROF_QUIET=1)
check "fork storm: exit 0, no hang" '[ "$rc" -eq 0 ] && grep -q "forks ok" "$tmp/stdout"'
check "fork storm: parent profile complete" 'complete "$tmp/out.json"'
check "fork storm: children wrote nothing" '[ -z "$(ls "$tmp" | grep -E "\.tmp\.|^gnnprof-")" ]'
# The same with gnnprof switched off: sites are still interned, and a child must not inherit
# the registry's lock held by the busy thread (it once waited forever on it).
rc=$(status_of fork GNNPROF_ENABLED=0)
check "fork storm with GNNPROF_ENABLED=0: exit 0, no hang" '[ "$rc" -eq 0 ] && grep -q "forks ok" "$tmp/stdout"'

# exec: the new image's exit status, no crash, the previous profile intact.
ref=$(status_of exec GNNPROF_ENABLED=0)
fresh
rc=$(status_of exec GNNPROF_OUTPUT="$tmp/out.json")
check "exec: same status as without gnnprof ($ref)" '[ "$rc" -eq "$ref" ] && [ "$rc" -eq 7 ]'
check "exec: output path still a complete profile" 'complete "$tmp/out.json"'

# SIGTERM / SIGKILL while profiling, and SIGSEGV: the host dies as it would without gnnprof.
for sig in TERM KILL; do
  fresh
  GNNPROF_OUTPUT="$tmp/out.json" "$app" loop >"$tmp/stdout" 2>&1 &
  pid=$!
  for _ in $(seq 50); do grep -q looping "$tmp/stdout" && break; sleep 0.1; done
  sleep 0.2
  kill -s "$sig" "$pid"
  wait "$pid"; rc=$?
  want=$((128 + $(kill -l "$sig")))
  check "SIG$sig: killed by the signal ($want)" '[ "$rc" -eq "$want" ]'
  check "SIG$sig: output path still a complete profile" 'complete "$tmp/out.json"'
done
ref=$(status_of segv GNNPROF_ENABLED=0)
fresh
rc=$(status_of segv GNNPROF_OUTPUT="$tmp/out.json")
check "SIGSEGV: same fate as without gnnprof ($ref)" '[ "$rc" -eq "$ref" ] && [ "$rc" -eq 139 ]'
check "SIGSEGV: output path still a complete profile" 'complete "$tmp/out.json"'
# Disk full: the profile cannot be written at exit. One warning line, the host's status
# unchanged, the previous profile intact, no temporary file left behind.
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=$(( $(stat -c %s "$tmp/previous.json") / 1024 + 64 ))k tmpfs "$tmp/full" 2>/dev/null; then
  cp "$tmp/previous.json" "$tmp/full/out.json"
  dd if=/dev/zero of="$tmp/full/filler" bs=4k 2>/dev/null
  GNNPROF_OUTPUT="$tmp/full/out.json" timeout 60 "$app" fork >"$tmp/stdout" 2>"$tmp/stderr"; rc=$?
  check "disk full: exit status kept" '[ "$rc" -eq 0 ] && grep -q "forks ok" "$tmp/stdout"'
  check "disk full: one warning line" '[ "$(wc -l <"$tmp/stderr")" -eq 1 ] && grep -q "^gnnprof: warning: cannot write .*No space left on device" "$tmp/stderr"'
  check "disk full: previous profile intact" 'complete "$tmp/full/out.json" && cmp -s "$tmp/full/out.json" "$tmp/previous.json"'
  check "disk full: no temporary file left" '[ -z "$(ls "$tmp/full" | grep "\.tmp\.")" ]'
  umount "$tmp/full"
else
  echo "skip: disk-full case (cannot mount a tmpfs here; needs root)"
fi
exit $fail
