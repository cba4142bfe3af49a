"""The ``parplan`` command line (``parplan.cli.app``): typer commands over the public API.

A command builds its objects once and exits, so the cyclic collector's default thresholds (700, 10, 10) would spend
≈ 50 ms of a 0.5 s ``suggest`` in full passes over the import graph of typer, pydantic and numpy
(benchmarks/startup.py); with higher thresholds refcounting still frees everything acyclic, and the long runs (the
executor's hot loops) switch the collector off around themselves anyway.
"""
import gc

gc.set_threshold(100_000, 50, 50)
