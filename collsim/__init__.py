"""collsim's requests: every question a face asks (the `collsim` command line, the Streamlit app), as one frozen,
typed request that checks and bounds itself when it is built and answers with a result that renders to text, JSON
and files (request.py).

- predict.PredictRequest: what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine);
- simulate.SimulateRequest (with machine.MachineSetup): one schedule on a machine, run by the engine;
- step.StepRequest: one training step of a scenario on a machine (whatif, scale);
- fit.FitRequest, fit.CalibrateRequest: an alpha-beta model, or a preset's free parameters, fitted to measured times;
- doctor.DoctorRequest: is an nccl-tests log's busbw what NCCL should reach on its machine, and if not, why;
- program.LintRequest: does a program of collectives line up and finish;
- colocate.ColocateRequest: several programs on one machine, together and alone: slowdowns and shared links;
- sweep.SweepRequest: simulated nccl-tests-like tables over sizes, one per algorithm (cases run in parallel);
- check.CheckRequest: schedules run on numpy buffers, every rank's result checked;
- draw.DrawRequest: an SVG picture of an algorithm, step by step.

Layers, each importing only from those before it: simulator -> verify -> collsim -> app (tests/test_layers.py).
Import the module you need (nothing is imported here, so a command that refuses its input stays quick).
"""
