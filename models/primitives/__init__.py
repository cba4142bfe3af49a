"""Shared cost primitives below every family: kernel efficiency by op, shape and dtype; collectives on measured
size curves; the calibration data they read; the global framework terms."""
