"""Subscripts of a class with a Python __getitem__ (a lazy frame dict, a Dataset). CPython 3.11
inlines such a call without the PEP 523 hook once the subscript site is specialized.

usage: getitem.py [decorate]    decorate: @gnnprof.profile on __getitem__ after the site warmed up"""
import sys


class Frames:
    def __getitem__(self, key):
        value = key * 2
        return value


def read(frames, n):
    total = 0
    for i in range(n):
        total += frames[i]
    return total


frames = Frames()
print(read(frames, 100))  # the site in read() is specialized by now
if sys.argv[1:] == ["decorate"]:
    import gnnprof
    gnnprof.profile(Frames.__getitem__)
print(read(frames, 1000))
