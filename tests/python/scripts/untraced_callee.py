"""A loop whose heavy line runs a function of another user module (spin_module.py) and whose
light line runs only the standard library; then threads of its own run that user function
(a thread's first frames already decided: it has no trace state). No torch, no gnnprof
import. Prints a count.

usage: untraced_callee.py STEPS"""
import json
import sys
import threading

import spin_module


def loop(steps):
    total = 0
    for i in range(steps):
        spin_module.spin(0.002)
        total += len(json.dumps({"i": i}))
    return total


print("total", loop(int(sys.argv[1])))
for _ in range(3):
    t = threading.Thread(target=spin_module.spin, args=(0.001,))
    t.start()
    t.join()
print("threads done")
