"""The errors that end a training run that started (exit code 1).

`config_io.ConfigError` is that of a configuration, flag or run folder that
cannot be used (exit code 2).
"""

from agents.tools.run_errors import TrainingError


class CheckpointError(TrainingError):
    """A checkpoint could not be saved; what it began to write is gone."""


def error_line(error):
    """The first line of an error that says what went wrong, not where."""
    message = getattr(error, 'message', None) or str(error)
    # Restores explain that the graph may have changed, then give the cause.
    message = message.rpartition('Original error:')[2]
    # Skip the lines of a failed session run or trace that locate the node.
    ignore = (
        'Graph execution error', 'Detected at node', 'File ', 'Node:', '[[',
        'in user code:')
    lines = [
        line.strip() for line in message.splitlines()
        if line.strip() and not line.strip().startswith(ignore)]
    return lines[0] if lines else type(error).__name__
