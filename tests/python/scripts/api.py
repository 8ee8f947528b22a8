"""The package's API in a script: @gnnprof.profile, gnnprof.stage (context manager, decorator
and bare decorator), gnnprof.step, a named gnnprof.record_materialization. Prints how the
package reached the core."""
import gnnprof


@gnnprof.stage("prepare")
def prepare(n):
    return list(range(n))


@gnnprof.stage
def checksum(data):
    return sum(data) % 7


@gnnprof.profile
def loop(steps):
    total = 0
    for _ in range(steps):
        data = prepare(100)
        with gnnprof.stage("sum"):
            total += sum(data)
        gnnprof.record_materialization(len(data), 8 * len(data), name="features")
        total += checksum(data)
        gnnprof.step()
    gnnprof.step_end()
    return total


print("total", loop(12))
print("how", gnnprof.status()["how"])
