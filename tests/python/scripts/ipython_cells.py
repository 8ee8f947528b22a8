"""Runs each argument as an IPython cell in one InteractiveShell, as a notebook would (tests of
the %gnnprof magics: tests/python/test_ipython.py). A literal \\n in an argument is a newline."""
import sys

from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance(colors="NoColor")
for cell in sys.argv[1:]:
    shell.run_cell(cell.replace("\\n", "\n"))
