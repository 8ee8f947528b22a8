"""A traced function recursing deeper than the tracer's stack (128 traced frames): the frames
beyond are not traced, and everything traced after it returns is again."""
import sys

sys.setrecursionlimit(5000)


@profile
def recurse(d):
    if d == 0:
        return 0
    return 1 + recurse(d - 1)


@profile
def after(n):
    s = 0
    for i in range(n):
        s += i
    return s


print(recurse(300), after(10))
