"""Profiler traces of real runs, read into programs (docs/traces.md): kineto.py reads PyTorch profiler traces,
program.py turns one trace per rank into a program of collectives."""
