"""The errors that end a training run, by type.

`config_io.ConfigError` is the error of a configuration, flag or run folder
that cannot be used (exit code 2); the errors here end a run that started
(exit code 1).
"""


class TrainingError(RuntimeError):
    """Training stopped: an environment failed or a value was not finite."""


class CheckpointError(TrainingError):
    """A checkpoint could not be saved; what it began to write is gone."""
