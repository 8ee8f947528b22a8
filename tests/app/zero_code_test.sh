#!/bin/bash
# gnnprof run / libgnnprof_preload.so on real programs: unmodified Python scripts (torch 1.13
# from /usr/bin/python3), the Python GNN sample, a forking DataLoader, SIGKILL and SIGTERM,
# an NVTX program without torch, CUPTI without a GPU, a torch ABI mismatch, and the exports.
# usage: zero_code_test.sh GNNPROF PRELOAD_SO NVTX_APP SAMPLE_PY NVTX_PYLIB
set -u
gnnprof=$1 preload=$2 nvtx_app=$3 sample=$4 nvtx_pylib=$5
. "$(dirname "$0")/lib.sh"
export GNNPROF_QUIET=1

# 1. Output, behaviour and exit code unchanged.
cat > "$tmp/fidelity.py" <<'PY'
import sys, torch
torch.manual_seed(0)
m = torch.nn.Linear(8, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(5):
    opt.zero_grad(); loss = m(torch.randn(4, 8)).pow(2).mean(); loss.backward(); opt.step()
    print("step", i, round(float(loss), 4))
print("to stderr", file=sys.stderr)
sys.exit(3)
PY
(cd "$tmp" && $py fidelity.py > plain.out 2> plain.err); plain_rc=$?
(cd "$tmp" && "$gnnprof" run -o "$tmp/fid/p.json" -- $py fidelity.py > prof.out 2> prof.err); prof_rc=$?
check "exit code kept (3)" "[ $plain_rc = 3 ] && [ $prof_rc = 3 ]"
check "stdout identical" "cmp -s '$tmp/plain.out' '$tmp/prof.out'"
check "program's stderr kept" "grep -q '^to stderr' '$tmp/prof.err'"
check "5 iterations from 5 optimizer steps" "[ \"\$(json $tmp/fid/p.json \"sum(1 for i in p['iterations'] if i['complete'])\")\" = 5 ]"
check "profile listed by gnnprof run" "grep -q 'fid/p.json  pid' '$tmp/prof.err'"

# 1a. Signal dispositions and the working directory are the program's: Ctrl-C (SIGINT) and
# SIGQUIT reach it with their default action (gnnprof run ignores them itself while it waits),
# and a program that changes directory still leaves its profile at -o.
cat > "$tmp/sigint.py" <<'PY'
import os, signal, sys, torch
print("handler", "default" if signal.getsignal(signal.SIGINT) is signal.default_int_handler else signal.getsignal(signal.SIGINT))
m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
os.chdir("/")
for i in range(5):
    opt.zero_grad(); m(torch.randn(2, 4)).sum().backward(); opt.step()
os.kill(os.getpid(), signal.SIGINT)
print("not reached")
PY
mkdir -p "$tmp/sig"
(cd "$tmp/sig" && "$gnnprof" run -o rel.json -- $py "$tmp/sigint.py" > "$tmp/sig.out" 2> "$tmp/sig.err"); rc=$?
check "SIGINT: Python's default handler, KeyboardInterrupt, exit 130 (rc $rc)" \
  "[ $rc = 130 ] && grep -q '^handler default' '$tmp/sig.out' && ! grep -q 'not reached' '$tmp/sig.out' && grep -q KeyboardInterrupt '$tmp/sig.err'"
check "a program that changed directory: its profile at the relative -o" "\"$gnnprof\" report '$tmp/sig/rel.json' > /dev/null"
# CPython ends an uncaught KeyboardInterrupt by SIGINT with its default action, after atexit but
# before the C atexit flush: the package writes the profile at its atexit.
check "KeyboardInterrupt: the profile holds all 5 iterations" \
  "[ \"\$(json $tmp/sig/rel.json \"sum(1 for i in p['iterations'] if i['complete'])\")\" = 5 ]"
(trap '' INT; "$gnnprof" run -o "$tmp/sig/ign.json" -- $py -c 'import signal; print(signal.getsignal(signal.SIGINT))' > "$tmp/sig.out" 2>/dev/null)
check "SIGINT ignored by the launcher's caller stays ignored (nohup, background jobs)" "grep -qxE '1|Handlers.SIG_IGN' '$tmp/sig.out'"

# 1b. The observer stops observing inside top-level ops (docs/zero-code.md), but never while
# the program's own torch.profiler is on: its nested ops must stay visible to it.
cat > "$tmp/own_prof.py" <<'PY'
import torch
m = torch.nn.Linear(8, 2)
with torch.autograd.profiler.profile() as prof:
    m(torch.randn(4, 8)).sum().backward()
names = {e.name for e in prof.function_events}
print("nested addmm seen" if "aten::addmm" in names and "aten::linear" in names else "nested ops lost: %s" % sorted(names))
PY
$py "$tmp/own_prof.py" > "$tmp/own_plain.out" 2>&1
"$gnnprof" run -o "$tmp/own/p.json" -- $py "$tmp/own_prof.py" > "$tmp/own.out" 2> "$tmp/own.err"
check "torch.profiler under gnnprof still sees nested ops" "grep -q 'nested addmm seen' '$tmp/own_plain.out' && grep -q 'nested addmm seen' '$tmp/own.out'"

# 2. The Python GNN sample: forward, backward, optimizer, materialize, >= 90 % coverage.
"$gnnprof" run -o "$tmp/sage/s.json" --html "$tmp/sage/s.html" -- $py "$sample" --nodes 20000 --steps 12 \
  --cache "$tmp/cache" > "$tmp/sage.out" 2> "$tmp/sage.err"
check "sample ran under gnnprof run" "grep -q '^steps 12 ' '$tmp/sage.out'"
cat > "$tmp/shares.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
it = [i for i in p["iterations"] if i["complete"]]
wall = sum(i["wall_ns"] for i in it)
cover = 1 - sum(i["unattributed_ns"] for i in it) / wall
share = {s: sum(i["stages"].get(s, 0) for i in it) / wall for s in ("forward", "backward", "optimizer", "materialize")}
print(len(it), round(cover, 3), " ".join(f"{k}={v:.3f}" for k, v in share.items()))
ok = len(it) == int(sys.argv[2]) and cover >= 0.9 and all(0.001 < v < 0.9 for v in share.values())
sys.exit(0 if ok else 1)
PY
check "iterations = 12 steps; forward/backward/optimizer/materialize plausible; >= 90% of loop covered ($($py "$tmp/shares.py" "$tmp/sage/s.json" 12))" \
  "$py '$tmp/shares.py' '$tmp/sage/s.json' 12"
check "HTML report written" "grep -q '</html>' '$tmp/sage/s.html'"
check "sample: ops observed in every iteration (ops of tens of us: no sampling)" \
  "json $tmp/sage/s.json \"all(i.get('ops_observed', True) for i in p['iterations']) and 'every iteration' in [c['reason'] for c in p['collectors'] if c['name']=='torch-op-sampling'][0]\" | grep -q True"

# 3. DataLoader workers (fork): no deadlock, the parent's profile intact.
cat > "$tmp/loader.py" <<'PY'
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(512, 16), torch.randint(0, 4, (512,)))
m = torch.nn.Linear(16, 4); opt = torch.optim.SGD(m.parameters(), lr=0.1)
n = 0
for epoch in range(2):
    for x, y in DataLoader(ds, batch_size=64, num_workers=2):
        opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step(); n += 1
print("steps", n)
PY
(cd "$tmp" && timeout 120 "$gnnprof" run -o "$tmp/dl/p.json" -- $py loader.py > dl.out 2> dl.err); rc=$?
check "DataLoader(num_workers=2) ran to the end (rc $rc)" "[ $rc = 0 ] && grep -q 'steps 16' '$tmp/dl.out'"
check "parent profile: 16 iterations" "[ \"\$(json $tmp/dl/p.json \"sum(1 for i in p['iterations'] if i['complete'])\")\" = 16 ]"
check "every profile written is readable" "for f in $tmp/dl/*.json; do \"$gnnprof\" report \"\$f\" >/dev/null 2>&1 || exit 1; done"
# The next launch at once, same -o: the workers' files just written are not this run's.
"$gnnprof" run -o "$tmp/dl/p.json" -- $py "$tmp/fidelity.py" > /dev/null 2> "$tmp/dl2.err"
check "a launch lists its own profiles, not the previous launch's workers'" "grep -q '^gnnprof run: 1 profile:' '$tmp/dl2.err'"

# 3b. Exits that skip atexit write the profile first (the preload's _exit): persistent
# DataLoader workers, which torch ends with _exit(0) on the parent's SIGTERM at exit, and a
# program that ends with os._exit(4).
cat > "$tmp/persistent.py" <<'PY'
import os, sys, torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(512, 16), torch.randint(0, 4, (512,)))
m = torch.nn.Linear(16, 4); opt = torch.optim.SGD(m.parameters(), lr=0.1)
dl = DataLoader(ds, batch_size=64, num_workers=2, persistent_workers=True)
n = 0
for epoch in range(2):
    for x, y in dl:
        opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step(); n += 1
print("steps", n, flush=True)
if len(sys.argv) > 1:
    os._exit(4)
PY
(cd "$tmp" && timeout 120 "$gnnprof" run -o "$tmp/pw/p.json" -- $py persistent.py > pw.out 2> pw.err); rc=$?
check "persistent_workers=True: exit 0, both workers' profiles written (rc $rc)" \
  "[ $rc = 0 ] && grep -q 'steps 16' '$tmp/pw.out' && [ \$(grep -c 'loader-worker' '$tmp/pw.err') = 2 ]"
(cd "$tmp" && timeout 120 "$gnnprof" run -o "$tmp/ox/p.json" -- $py persistent.py exit > ox.out 2> ox.err); rc=$?
check "os._exit(4): exit code kept, the profile complete (16 iterations) and marked failed" \
  "[ $rc = 4 ] && [ \"\$(json $tmp/ox/p.json \"sum(1 for i in p['iterations'] if i['complete'])\")\" = 16 ] && [ \"\$(json $tmp/ox/p.json \"p['run']['exit_code']\")\" = 4 ]"

# 3c. An exec: the profile so far is written first, and the new image's goes beside it.
cat > "$tmp/execself.py" <<'PY'
import os, torch
m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(20):
    opt.zero_grad(); m(torch.randn(2, 4)).sum().backward(); opt.step()
os.execv("/bin/echo", ["/bin/echo", "exec'd"])
PY
(cd "$tmp" && "$gnnprof" run -o "$tmp/exe/p.json" -- $py execself.py > exe.out 2> exe.err); rc=$?
check "exec: exit code and output of the new image (rc $rc)" "[ $rc = 0 ] && grep -qx \"exec'd\" '$tmp/exe.out'"
check "exec: the loop's 20 iterations kept at -o, the new image's profile beside it" \
  "[ \"\$(json $tmp/exe/p.json \"sum(1 for i in p['iterations'] if i['complete'])\")\" -ge 19 ] && ls $tmp/exe/p.*.exec1.json >/dev/null"

# 4. SIGKILL mid-run: the last periodic flush is a readable profile. Sections 4 and 5 keep
# gnnprof's threads (GNNPROF_THREADLESS=0); section 12 runs the same in threadless mode.
(cd "$tmp" && GNNPROF_THREADLESS=0 GNNPROF_OUTPUT="$tmp/kill.json" GNNPROF_FLUSH_INTERVAL_MS=200 LD_PRELOAD="$preload" \
  exec $py "$sample" --nodes 20000 --steps 100000 --cache "$tmp/cache" > /dev/null 2>&1) &
pid=$!
for i in $(seq 1 300); do [ -s "$tmp/kill.json" ] && $py -c "import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if p['iterations'] else 1)" "$tmp/kill.json" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "SIGKILL: profile readable with iterations" "\"$gnnprof\" report '$tmp/kill.json' > /dev/null"
check "SIGKILL: no half-written file left in its place" "! ls '$tmp'/kill.json.tmp.* >/dev/null 2>&1 || \"$gnnprof\" report '$tmp/kill.json' >/dev/null"

# 5. SIGTERM: flushed, then the process dies of SIGTERM as it would have.
# term.py touches $READY after 20 iterations: the signal comes once the loop runs, however long
# `import torch` takes on a loaded machine (a fixed sleep raced it).
cat > "$tmp/term.py" <<'PY'
import os, time, torch
m = torch.nn.Linear(4, 4)
i = 0
while True:
    m(torch.randn(2, 4)); time.sleep(0.01)
    i += 1
    if i == 20:
        open(os.environ["READY"], "w").close()
PY
wait_ready() { for _ in $(seq 1 600); do [ -e "$1" ] && return 0; sleep 0.1; done; echo "note: $1 never appeared"; }
(cd "$tmp" && READY="$tmp/term.ready" GNNPROF_THREADLESS=0 GNNPROF_OUTPUT="$tmp/term.json" GNNPROF_FLUSH_INTERVAL_MS=0 LD_PRELOAD="$preload" exec $py term.py) &
pid=$!
wait_ready "$tmp/term.ready"
kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM: killed by SIGTERM (rc $rc = 143)" "[ $rc = 143 ]"
check "SIGTERM: profile written at the signal, by gnnprof's threads" \
  "\"$gnnprof\" report '$tmp/term.json' > /dev/null && json $tmp/term.json \"[c['reason'] for c in p['collectors'] if c['name'] == 'threads'][0]\" | grep -q '^gnnprof-drainer'"

# 6. No torch, NVTX only; 7. CUPTI with no GPU: one line, collector off with the reason.
GNNPROF_CUPTI=1 "$gnnprof" run -o "$tmp/nv/n.json" -- "$nvtx_app" 4 > "$tmp/nv.out" 2> "$tmp/nv.err"; rc=$?
check "NVTX program: exit code kept (4)" "[ $rc = 4 ] && grep -q 'nvtx_app done' '$tmp/nv.out'"
check "NVTX ranges became stages" "[ \"\$(json $tmp/nv/n.json \"sorted(s['name'] for s in p['stages'])\")\" = \"['async_io', 'epoch_step', 'fetch']\" ]"
check "NVTX collector on, torch-ops off with a reason" \
  "[ \"\$(json $tmp/nv/n.json \"[(c['enabled'], bool(c['reason'])) for c in p['collectors'] if c['name'] in ('nvtx','torch-ops')]\")\" = '[(False, True), (True, False)]' ] || [ \"\$(json $tmp/nv/n.json \"[(c['enabled'], bool(c['reason'])) for c in p['collectors'] if c['name'] in ('nvtx','torch-ops')]\")\" = '[(True, False), (False, True)]' ]"
check "CUPTI without a GPU: collector off with the reason" "[ \"\$(json $tmp/nv/n.json \"[c['enabled'] for c in p['collectors'] if c['name']=='cupti' and c['reason']]\")\" = '[False]' ]"
check "CUPTI without a GPU: exactly one line on stderr" "[ \$(grep -c '^gnnprof: cupti' '$tmp/nv.err') = 1 ]"

# 8. A torch the observer was not built against: disabled with the reason, program unharmed.
(cd "$tmp" && GNNPROF_TORCH_BUILT_PATH=/opt/other/libtorch_cpu.so "$gnnprof" run -o "$tmp/abi/p.json" -- $py fidelity.py > abi.out 2> abi.err); rc=$?
check "ABI mismatch: exit code and output kept" "[ $rc = 3 ] && cmp -s '$tmp/plain.out' '$tmp/abi.out'"
check "ABI mismatch: one line naming both torches" "[ \$(grep -c 'built against torch' '$tmp/abi.err') = 1 ]"
check "ABI mismatch: collector off with the reason" "json $tmp/abi/p.json \"[c for c in p['collectors'] if c['name']=='torch-ops'][0]['reason']\" | grep -q /opt/other"

# 11. Iteration sampling on a loop of few-microsecond ops: the observer measures its own cost
# and observes ops in one iteration in N; iterations stay exact (user scopes always observed).
cat > "$tmp/small_ops.py" <<'PY'
import torch
torch.set_num_threads(1)
m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
for _ in range(1500):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
print("small ops done")
PY
cat > "$tmp/sampled.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
it = [i for i in p["iterations"] if i["complete"]]
seen = [i for i in it if i.get("ops_observed", True)]
unseen = [i for i in it if not i.get("ops_observed", True)]
why = [c["reason"] for c in p["collectors"] if c["name"] == "torch-op-sampling"][0]
print(len(it), len(seen), len(unseen), why)
ok = (len(it) == 1500 and 0 < len(seen) < len(it) / 2 and "one in" in why
      and all({"forward", "backward", "optimizer"} <= set(i["stages"]) for i in seen[1:])
      and all("optimizer" in i["stages"] and "forward" not in i["stages"] for i in unseen))
sys.exit(0 if ok else 1)
PY
"$gnnprof" run -o "$tmp/so/p.json" -- $py "$tmp/small_ops.py" > "$tmp/so.out" 2> "$tmp/so.err"; rc=$?
check "small-op loop: exit 0, iterations exact, ops observed in a minority with forward/backward/optimizer, the others optimizer only ($($py "$tmp/sampled.py" "$tmp/so/p.json"))" \
  "[ $rc = 0 ] && $py '$tmp/sampled.py' '$tmp/so/p.json'"
check "small-op loop: the report says which iterations its stage figures come from" \
  "\"$gnnprof\" report '$tmp/so/p.json' | grep -q 'Iteration sampling: torch ops observed in'"
GNNPROF_TORCH_SAMPLE=all "$gnnprof" run -o "$tmp/so/all.json" -- $py "$tmp/small_ops.py" > /dev/null 2>&1
check "GNNPROF_TORCH_SAMPLE=all observes every iteration" \
  "json $tmp/so/all.json \"all(i.get('ops_observed', True) for i in p['iterations']) and len(p['iterations']) >= 1500\" | grep -q True"

# 12. Threadless mode (the default for a single-threaded Python host; docs/zero-code.md,
# "Threads"): such a process gets no gnnprof thread (glibc's malloc locks from the first one on);
# torch is found through the dlsym trampoline, the loop thread drains and flushes, SIGTERM
# flushes from a forked child, and the host's first thread of its own starts gnnprof's.
cat > "$tmp/threads.py" <<'PY'
import os, sys, threading, torch
m = torch.nn.Linear(64, 8); opt = torch.optim.SGD(m.parameters(), lr=0.1)
def steps(n):
    for _ in range(n):
        opt.zero_grad(); m(torch.randn(32, 64)).pow(2).mean().backward(); opt.step()
steps(30)
print("threads", len(os.listdir("/proc/self/task")))
if sys.argv[1] == "start-one":
    t = threading.Thread(target=lambda: None); t.start(); t.join()
    steps(30)
    print("threads", len(os.listdir("/proc/self/task")))
PY
threads_reason="[c['reason'] for c in p['collectors'] if c['name'] == 'threads'][0]"
(cd "$tmp" && OMP_NUM_THREADS=1 GNNPROF_TORCH_SAMPLE=all "$gnnprof" run -o "$tmp/tl/one.json" -- $py threads.py none > tl1.out 2>/dev/null); rc=$?
check "threadless: exit 0, the process keeps one thread" "[ $rc = 0 ] && [ \"\$(cat '$tmp/tl1.out')\" = 'threads 1' ]"
check "threadless: torch found without a thread, 30 iterations with forward/backward/optimizer" \
  "json $tmp/tl/one.json \"len([i for i in p['iterations'] if i['complete'] and {'forward','backward','optimizer'} <= set(i['stages'])]) >= 29 and sum(1 for i in p['iterations'] if i['complete']) == 30\" | grep -q True"
check "threadless: the collector list says so" "json $tmp/tl/one.json \"$threads_reason\" | grep -q '^none while the process is single-threaded'"
(cd "$tmp" && OMP_NUM_THREADS=1 "$gnnprof" run -o "$tmp/tl/two.json" -- $py threads.py start-one > tl2.out 2>/dev/null); rc=$?
# (3 = the loop thread and gnnprof's two; the joined host thread may still be listed a moment.)
check "threadless: the host's own thread starts gnnprof's drainer and attach threads (1, then >= 3)" \
  "[ $rc = 0 ] && [ \"\$(head -1 '$tmp/tl2.out')\" = 'threads 1' ] && [ \"\$(sed -n 2p '$tmp/tl2.out' | cut -d' ' -f2)\" -ge 3 ]"
check "threadless then threads: 60 iterations, collector updated" \
  "json $tmp/tl/two.json \"sum(1 for i in p['iterations'] if i['complete']) == 60 and $threads_reason.startswith('gnnprof-drainer')\" | grep -q True"
(cd "$tmp" && OMP_NUM_THREADS=1 GNNPROF_THREADLESS=0 "$gnnprof" run -o "$tmp/tl/off.json" -- $py threads.py none > tl0.out 2>/dev/null)
check "GNNPROF_THREADLESS=0: gnnprof's two threads from the start" "[ \"\$(cat '$tmp/tl0.out')\" = 'threads 3' ]"
(cd "$tmp" && READY="$tmp/term1.ready" OMP_NUM_THREADS=1 GNNPROF_OUTPUT="$tmp/term1.json" GNNPROF_FLUSH_INTERVAL_MS=0 LD_PRELOAD="$preload" exec $py term.py) &
pid=$!
wait_ready "$tmp/term1.ready"
kill -TERM $pid; wait $pid; rc=$?
check "threadless SIGTERM: killed by SIGTERM (rc $rc = 143)" "[ $rc = 143 ]"
check "threadless SIGTERM: the forked child wrote the profile with the loop's ops" \
  "json $tmp/term1.json \"[s['hits'] for s in p['stages'] if s['name'] == 'aten::linear'][0] > 10\" | grep -q True"
(cd "$tmp" && OMP_NUM_THREADS=1 GNNPROF_OUTPUT="$tmp/kill1.json" GNNPROF_FLUSH_INTERVAL_MS=200 LD_PRELOAD="$preload" \
  exec $py "$sample" --nodes 20000 --steps 100000 --cache "$tmp/cache" > /dev/null 2>&1) &
pid=$!
for i in $(seq 1 300); do [ -s "$tmp/kill1.json" ] && $py -c "import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if len(p['iterations']) > 5 else 1)" "$tmp/kill1.json" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "threadless SIGKILL: the loop thread's periodic flush is a readable profile with iterations" \
  "\"$gnnprof\" report '$tmp/kill1.json' > /dev/null && json $tmp/kill1.json \"len(p['iterations']) > 5\" | grep -q True"
check "threadless SIGTERM and SIGKILL runs were threadless" \
  "json $tmp/term1.json \"$threads_reason\" | grep -q '^none while' && json $tmp/kill1.json \"$threads_reason\" | grep -q '^none while'"

# 12b. A single-threaded Python program without torch whose only gnnprof calls are NVTX ranges
# (a ctypes library): no iteration marks ever, so after 2 s its NVTX calls are the poll points
# that drain and flush, and a SIGKILL leaves a readable profile with its ranges.
cat > "$tmp/nvtx_py.py" <<'PY'
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
i = 0
while True:
    lib.nvtx_steps(4, 5)
    i += 1
    if i == 20:
        print("threads", len(os.listdir("/proc/self/task")), flush=True)
PY
(cd "$tmp" && GNNPROF_OUTPUT="$tmp/nvpy.json" GNNPROF_FLUSH_INTERVAL_MS=200 LD_PRELOAD="$preload" exec $py nvtx_py.py "$nvtx_pylib" > nvpy.out 2>&1) &
pid=$!
for i in $(seq 1 300); do [ -s "$tmp/nvpy.json" ] && $py -c "import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if [s for s in p['stages'] if s['name'] == 'py_step' and s['hits'] > 50] else 1)" "$tmp/nvpy.json" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null
check "NVTX-only Python host: one thread, periodic flushes from its NVTX calls, readable after SIGKILL" \
  "[ \"\$(cat '$tmp/nvpy.out')\" = 'threads 1' ] && \"$gnnprof\" report '$tmp/nvpy.json' > /dev/null && json $tmp/nvpy.json \"[s['hits'] for s in p['stages'] if s['name'] == 'py_step'][0] > 50 and $threads_reason.startswith('none while')\" | grep -q True"

# 9. LD_PRELOAD by hand; 10. only the C ABI and the NVTX entry point are exported.
(cd "$tmp" && GNNPROF_OUTPUT="$tmp/hand.json" LD_PRELOAD="$preload" $py fidelity.py > /dev/null 2>&1)
check "LD_PRELOAD by hand writes GNNPROF_OUTPUT" "\"$gnnprof\" report '$tmp/hand.json' > /dev/null"
check "exports: gnnprof_*, InitializeInjectionNvtx2, the dlsym trampoline and _exit/_Exit/execv/execve only" \
  "[ -z \"\$(nm -D --defined-only '$preload' | awk '{print \$3}' | grep -v '^gnnprof_' | grep -v '^InitializeInjectionNvtx2\$' | grep -v '^dlsym\$' | grep -vx '_exit\\|_Exit\\|execv\\|execve')\" ]"
exit $fail
