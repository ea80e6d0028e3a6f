"""The machinery of a training run.

The trainer and the simulation graph of a run, its folder, the checking and
the file of its configuration, checkpoints, how it stops, what produced it,
sweeps' grids and records, and the export and videos of a trained policy.
The scripts of `agents.scripts` are thin over these modules.
"""
