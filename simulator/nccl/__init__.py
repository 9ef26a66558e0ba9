"""Run it the way NCCL does: NCCL's tuning model, its picks (algorithm, protocol, channels), the schedules it runs
(rings, trees, NVLS, NVLS-tree, PAT) and `predict`, which times them on a machine preset; calibrations and their fits."""
