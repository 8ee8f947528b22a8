#!/bin/bash
# gnnprof merge on synthetic rank profiles (tests/app/rank_profile_gen.cpp): the injected
# straggler and its stage, imbalance, JSON and HTML outputs, the errors that exit 2 (duplicate
# ranks, different runs, a profile without a rank, missing and truncated files), and 64 ranks
# merged in under 5 s.
# usage: merge_test.sh GNNPROF RANK_PROFILE_GEN
set -u
gnnprof=$1 gen=$2
. "$(dirname "$0")/lib.sh"
export GNNPROF_RUN_ID=merge-test WORLD_SIZE=4

# Four ranks, rank 2 spends 400 us more per iteration sampling.
for r in 0 1 2 3; do
  slow=0; [ $r = 2 ] && slow=400
  RANK=$r LOCAL_RANK=$r "$gen" 40 "$tmp/r$r.json" $slow || echo "generator failed for rank $r"
done
"$gnnprof" merge "$tmp"/r0.json "$tmp"/r1.json "$tmp"/r2.json "$tmp"/r3.json -o "$tmp/m.json" --html "$tmp/m.html" \
  > "$tmp/m.txt" 2> "$tmp/m.err"; rc=$?
check "merge of 4 ranks succeeds (rc $rc)" "[ $rc = 0 ]"
check "text: the 4 ranks side by side" "grep -q 'rank 0 *rank 1 *rank 2 *rank 3' '$tmp/m.txt'"
check "text: rank 2 is the straggler, in stage sample" "grep -q 'rank 2: busy .* stage \"sample\"' '$tmp/m.txt'"
check "text: only one straggler" "[ \$(grep -c '^  rank [0-9]*: busy' '$tmp/m.txt') = 1 ]"
check "JSON: gnnprof.merge/1 with the straggler and its stage" \
  "$py -c \"import json; m=json.load(open('$tmp/m.json')); assert m['schema']=='gnnprof.merge/1'; s=m['stragglers']; assert [x['rank'] for x in s]==[2] and s[0]['stage']=='sample', s\""
check "JSON: per-iteration time per rank, comm share, imbalance" \
  "$py -c \"import json; m=json.load(open('$tmp/m.json')); r=m['ranks']; assert len(r)==4 and all(len(x['iteration_ns'])==38 for x in r); assert r[0]['comm_share']>r[2]['comm_share']; assert m['imbalance']['materialized_rows']>1.2\""
check "HTML: one offline file with the straggler" "grep -q 'class=\"strag\">rank 2' '$tmp/m.html' && ! grep -q 'src=\"http' '$tmp/m.html'"

# Errors: one line naming the file(s) and the problem, exit 2.
cp "$tmp/r1.json" "$tmp/copy.json"
"$gnnprof" merge "$tmp/r0.json" "$tmp/r1.json" "$tmp/copy.json" > /dev/null 2> "$tmp/dup.err"; rc=$?
check "duplicate ranks: exit 2, one line naming both files (rc $rc)" \
  "[ $rc = 2 ] && [ \$(wc -l < '$tmp/dup.err') = 1 ] && grep -q 'r1.json and .*copy.json are both rank 1' '$tmp/dup.err'"
GNNPROF_RUN_ID=another-run RANK=3 "$gen" 5 "$tmp/other.json" 0 1
"$gnnprof" merge "$tmp/r0.json" "$tmp/other.json" > /dev/null 2> "$tmp/run.err"; rc=$?
check "different runs: exit 2, one line naming both (rc $rc)" \
  "[ $rc = 2 ] && [ \$(wc -l < '$tmp/run.err') = 1 ] && grep -q 'r0.json (run merge-test) and .*other.json (run another-run) are from different runs' '$tmp/run.err'"
env -u RANK -u WORLD_SIZE "$gen" 5 "$tmp/norank.json" 0 1
"$gnnprof" merge "$tmp/r0.json" "$tmp/norank.json" > /dev/null 2> "$tmp/norank.err"; rc=$?
check "profile without a rank: exit 2 (rc $rc)" "[ $rc = 2 ] && grep -q 'norank.json: not the profile of a distributed rank' '$tmp/norank.err'"
head -c 300 "$tmp/r0.json" > "$tmp/trunc.json"
"$gnnprof" merge "$tmp/trunc.json" "$tmp/r1.json" > /dev/null 2> "$tmp/trunc.err"; rc=$?
check "truncated profile: exit 2, one line naming it (rc $rc)" "[ $rc = 2 ] && [ \$(wc -l < '$tmp/trunc.err') = 1 ] && grep -q trunc.json '$tmp/trunc.err'"
"$gnnprof" merge "$tmp/nope.json" > /dev/null 2> "$tmp/nope.err"; rc=$?
check "missing profile: exit 2 (rc $rc)" "[ $rc = 2 ] && grep -q nope.json '$tmp/nope.err'"
"$gnnprof" merge "$tmp/r0.json" "$tmp/r1.json" -o "$tmp/no/such/dir/m.json" > /dev/null 2>&1; rc=$?
check "unwritable output: exit 1" "[ $rc = 1 ]"

# 64 ranks (1000 iterations each, one straggler): merged in < 5 s; the tables switch to
# min / median / max.
mkdir -p "$tmp/64"
for r in $(seq 0 63); do
  slow=0; [ $r = 37 ] && slow=200
  WORLD_SIZE=64 RANK=$r LOCAL_RANK=$((r % 8)) "$gen" 1000 "$tmp/64/rank$r.json" $slow 1 &
  [ $((r % 2)) = 1 ] && wait
done
wait
start=$(date +%s%N)
"$gnnprof" merge "$tmp"/64/rank*.json --html "$tmp/64.html" > "$tmp/64.txt" 2> "$tmp/64.err"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "merge of 64 ranks x 1000 iterations: $ms ms ($(du -sh "$tmp/64" | cut -f1) of profiles)"
check "64 ranks merged (rc $rc) in < 5 s ($ms ms)" "[ $rc = 0 ] && [ $ms -lt 5000 ]"
check "64 ranks: min / median / max columns, rank 37 found" \
  "grep -q 'min *median *max' '$tmp/64.txt' && grep -q 'rank 37: busy' '$tmp/64.txt'"
check "64 ranks: HTML says they are too many to list" "grep -q 'too many to list' '$tmp/64.html'"
exit $fail
