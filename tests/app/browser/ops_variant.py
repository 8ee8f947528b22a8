"""A recorded profile with its op stages cut to the heaviest N or padded to N (copies of the
lightest under new names), for the browser layout test.  usage: ops_variant.py IN OUT N"""
import copy
import json
import sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = json.load(open(src))
ops = [s for s in p["stages"] if s["category"] == "op"]
ops.sort(key=lambda s: -s["total_ns"])
if n < len(ops):
    drop = {s["name"] for s in ops[n:]}
    p["stages"] = [s for s in p["stages"] if s["name"] not in drop]
    p["stage_edges"] = [e for e in p["stage_edges"] if e["child"] not in drop and e["parent"] not in drop]
    for it in p["iterations"]:
        it["stages"] = {k: v for k, v in it["stages"].items() if k not in drop}
else:
    for i in range(n - len(ops)):
        base = ops[-1 - i % len(ops)]
        s = copy.deepcopy(base)
        s["name"] = f"{base['name']} (copy {i})"
        p["stages"].append(s)
        for e in list(p["stage_edges"]):
            if e["child"] == base["name"]:
                p["stage_edges"].append(dict(e, child=s["name"]))
json.dump(p, open(dst, "w"))
