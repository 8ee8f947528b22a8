"""gnnprof.stop() takes the line tracer's frame hook out (a stopped session traces nothing and
costs nothing per call); gnnprof.start() puts it back for what was selected. Prints the
tracer's state after each phase."""
import gnnprof


@gnnprof.profile
def loop(steps):
    total = 0
    for i in range(steps):
        total += i
    return total


def state(label):
    st = gnnprof.status()["tracer"]
    print(label, "installed", st["installed"], "line_events", st["line_events"])


loop(3)
state("running")
print("stop", gnnprof.stop())
state("stopped")
loop(3)
state("stopped, called")
print("start", gnnprof.start())
state("restarted")
loop(3)
state("restarted, called")
