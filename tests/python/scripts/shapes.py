"""Statement shapes for the line tracer: a multi-line statement, a generator, an exception
through a traced line, recursion, a second thread and a `with` block in a loop. Decorated with @profile (kernprof -b
style): under `gnnprof run` the builtin comes from gnnprof."""
import contextlib
import sys
import threading


@profile
def multiline(n):
    total = 0
    for i in range(n):
        total += (i *
                  2 +
                  1)
    return total


@profile
def gen(n):
    for i in range(n):
        yield i * i


@profile
def raises(k):
    x = k + 1
    if k % 2 == 0:
        raise ValueError(k)
    return x


@profile
def recurse(d):
    if d == 0:
        return 0
    return 1 + recurse(d - 1)


@profile
def worker(n, out):
    s = 0
    for i in range(n):
        s += i
    out.append(s)


@profile
def within(n):
    total = 0
    for i in range(n):
        with contextlib.nullcontext():
            total += i
        while total % 7:
            total += 1
    return total


def main():
    print("multiline", multiline(50))
    print("within", within(20))
    print("gen", sum(gen(7)))
    caught = 0
    for k in range(10):
        try:
            raises(k)
        except ValueError:
            caught += 1
    print("caught", caught)
    print("recurse", recurse(5))
    out = []
    t = threading.Thread(target=worker, args=(1000, out), name="side")
    t.start()
    t.join()
    print("worker", out[0])
    sys.stderr.write("to stderr\n")
    return 3


if __name__ == "__main__":
    sys.exit(main())
