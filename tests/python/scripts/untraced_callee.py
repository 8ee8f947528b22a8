"""A loop whose heavy line runs a function of another user module (spin_module.py) and whose
light line runs only the standard library. No torch, no gnnprof import. Prints a count.

usage: untraced_callee.py STEPS"""
import json
import sys

import spin_module


def loop(steps):
    total = 0
    for i in range(steps):
        spin_module.spin(0.002)
        total += len(json.dumps({"i": i}))
    return total


print("total", loop(int(sys.argv[1])))
