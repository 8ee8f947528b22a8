"""Generators and coroutines at their edges: throw(), close(), send(), one collected while
suspended, an async coroutine, all on a second thread too. The line tables of the 3.11 tracer
and the sys.monitoring tracer (3.12, 3.13) are the same (test_python_lines.py)."""
import asyncio, gc, sys, threading

@profile
def gen(n):
    try:
        for i in range(n):
            x = yield i
            if x == "stop":
                return
    except ValueError:
        y = -1
        yield y
    finally:
        z = 0

@profile
async def coro(n):
    total = 0
    for i in range(n):
        await asyncio.sleep(0)
        total += i
    return total

@profile
def user():
    g = gen(10)
    a = next(g)
    b = next(g)
    c = g.throw(ValueError())
    g.close()
    h = gen(10)
    d = next(h)
    del h
    gc.collect()
    k = gen(5)
    e = next(k)
    f = k.send("stop") if False else next(k)
    try:
        k.send("stop")
    except StopIteration:
        pass
    s = sum(gen(4))
    r = asyncio.run(coro(5))
    return a, b, c, d, e, f, s, r

out = []
t = threading.Thread(target=lambda: out.append(user()))
t.start(); t.join()
print(user(), out[0])
