"""A loop through gnnprof's package on a Python the line tracer does not support: stages, steps
and prefetch still work, @gnnprof.profile is accepted, output and exit code are the script's."""
import sys

import gnnprof


@gnnprof.profile
def train(n):
    total = 0
    for batch in gnnprof.prefetch(iter(range(n)), depth=2):
        with gnnprof.stage("sample"):
            total += sum(i * i for i in range(2000 + batch))
        with gnnprof.stage("forward"):
            total += sum(range(1000))
        gnnprof.step()
    return total


print("total", train(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
sys.exit(3)
