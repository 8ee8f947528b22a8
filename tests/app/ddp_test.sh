#!/bin/bash
# Distributed training under gnnprof run: the Python sample with --ddp, two ranks with Gloo on
# CPU started by torch.distributed.run, rank 1 given 4x the seeds per batch. Asserts the two
# rank profiles (rank, local rank, world size, host, one run id, a comm stage with bytes and the
# collectives in flight), the gnnprof run listing, and that gnnprof merge names rank 1 as the
# straggler with a stage that is not communication.
# usage: ddp_test.sh GNNPROF PRELOAD_SO SAMPLE_PY
set -u
gnnprof=$1 preload=$2 sample=$3
. "$(dirname "$0")/lib.sh"
export GNNPROF_QUIET=1 OMP_NUM_THREADS=1

# Debian's torch 1.13 on Python 3.11: torch.distributed.run's default --redirects/--tee ("0")
# fail to parse (IntFlag iteration changed in 3.11); "1" works. --standalone picks a free port.
(cd "$tmp" && "$gnnprof" run --preload "$preload" -o "$tmp/ddp/ddp.json" -- $py -m torch.distributed.run --standalone \
   --nproc_per_node 2 --redirects 1 --tee 1 "$sample" --ddp --nodes 20000 --steps 24 --straggler-rank 1 \
   --straggler-factor 4 --cache "$tmp/cache" > "$tmp/ddp.out" 2> "$tmp/ddp.err"); rc=$?
check "DDP run under gnnprof run: exit 0 (rc $rc)" "[ $rc = 0 ]"
check "both ranks trained" "grep -q 'rank 0/2 steps 24' '$tmp/ddp.out' && grep -q 'rank 1/2 steps 24' '$tmp/ddp.out'"
r0=$(ls "$tmp"/ddp/ddp.rank0.*.json 2>/dev/null | head -1) r1=$(ls "$tmp"/ddp/ddp.rank1.*.json 2>/dev/null | head -1)
check "two rank profiles written" "[ -n '$r0' ] && [ -n '$r1' ]"
check "gnnprof run lists both ranks and prints the merge command" \
  "grep -q 'rank 0 of 2' '$tmp/ddp.err' && grep -q 'rank 1 of 2' '$tmp/ddp.err' && grep -q 'gnnprof merge .*rank0' '$tmp/ddp.err'"
for f in "$r0" "$r1"; do
  [ -n "$f" ] || continue
  check "$(basename "$f"): rank, local rank, world size, host, run id" \
    "json '$f' \"p['run']['world_size']==2 and p['run']['local_rank'] in (0,1) and p['run']['host']!='' and p['run'].get('run_id','')!=''\" | grep -q True"
  check "$(basename "$f"): a comm stage and gloo collectives in flight" \
    "json '$f' \"sorted({s['name'] for s in p['stages'] if s['category']=='comm'} & {'comm','gloo:all_reduce'})\" | grep -q \"\\['comm', 'gloo:all_reduce'\\]\""
  check "$(basename "$f"): bytes of the collectives" \
    "json '$f' \"[c['mean'] for c in p['counters'] if c['name']=='comm bytes'][0] > 0\" | grep -q True"
  # Where the package has its line tracer (not built with GNNPROF_PYTHON_LINES=OFF).
  if [ "$(json "$f" "[c['enabled'] for c in p['collectors'] if c['name'] == 'python-lines']")" = "[True]" ]; then
  check "$(basename "$f"): the traced loop's loss.backward() line waits for the gradient allreduce" \
    "json '$f' \"[l.get('stages', {}).get('comm wait', 0) > 0 for l in p['lines'] if l['code'] == 'loss.backward()'] == [True]\" | grep -q True"
  fi
done
check "same run id on both ranks" "[ \"\$(json '$r0' \"p['run']['run_id']\")\" = \"\$(json '$r1' \"p['run']['run_id']\")\" ]"
"$gnnprof" merge "$r0" "$r1" -o "$tmp/m.json" --html "$tmp/m.html" > "$tmp/m.txt" 2> "$tmp/m.err"; rc=$?
cat "$tmp/m.txt"
check "merge: exit 0 (rc $rc)" "[ $rc = 0 ]"
check "merge: rank 1 is the straggler, named with a stage that is not comm" \
  "$py -c \"import json; m=json.load(open('$tmp/m.json')); s=m['stragglers']; cat={x['name']:x['category'] for x in m['stages']}; assert [x['rank'] for x in s]==[1] and s[0]['stage'] and cat[s[0]['stage']]!='comm', s\""
check "merge: the fast rank waits longer in comm" \
  "$py -c \"import json; m=json.load(open('$tmp/m.json')); r=m['ranks']; assert r[0]['comm_ns']>r[1]['comm_ns']\""

# The plain torchrun entry point, where one exists (Debian's python3-torch installs it).
if command -v torchrun > /dev/null; then
  cat > "$tmp/allreduce.py" <<'PY'
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1024)
if dist.get_rank() == 1:
    time.sleep(0.3)  # rank 0 waits in its first all_reduce
for _ in range(5):
    dist.all_reduce(t)
dist.barrier()
print("rank", dist.get_rank(), "sum", float(t[0]))
dist.destroy_process_group()
PY
  (cd "$tmp" && "$gnnprof" run --preload "$preload" -o "$tmp/tr/t.json" -- torchrun --standalone --nproc_per_node 2 \
     --redirects 1 --tee 1 "$tmp/allreduce.py" > "$tmp/tr.out" 2> "$tmp/tr.err"); rc=$?
  check "torchrun under gnnprof run: exit 0 (rc $rc), two rank profiles" \
    "[ $rc = 0 ] && [ \$(ls '$tmp'/tr/t.rank*.json | wc -l) = 2 ]"
  check "torchrun: explicit all_reduce is comm with bytes, in flight on the lane; rank 0's wait exposed (>= 0.2 s)" \
    "json \$(ls '$tmp'/tr/t.rank0.*.json) \"(lambda t: {'comm', 'gloo:all_reduce'} <= set(t) and t.get('comm wait', 0) >= 2e8)({s['name']: s['total_ns'] for s in p['stages'] if s['category']=='comm'}) and [c['mean'] for c in p['counters'] if c['name']=='comm bytes'] == [4096.0]\" | grep -q True"
fi
exit $fail
