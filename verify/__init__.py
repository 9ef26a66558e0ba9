"""Run collsim schedules and native collectives on real torch.distributed process groups.

Nothing here is imported by the simulator; torch is imported only inside this package, so
`collsim --help` and every simulator command work without torch installed.
"""
