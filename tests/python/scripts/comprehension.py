"""A comprehension spanning lines: CPython 3.12+ runs a list comprehension in its statement's
frame (PEP 709), so its loop jumps back inside the statement; the statement is still one hit."""


@profile
def comp(n):
    xs = [i * 2
          for i in range(n)]
    squares = {i: i * i
               for i in xs}
    return len(xs), sum(squares.values())


print(*comp(50))
