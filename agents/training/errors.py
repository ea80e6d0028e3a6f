"""The errors of a started training run, and TensorFlow's messages read."""

import re

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


# A line of `tf.debugging.check_numerics`, of its gradient (quoted as bytes),
# and of the NumPy checks of `tools.in_graph_batch_env` (a ValueError).
_NOT_FINITE = re.compile(
    r'^(Not a number .* in gradient\. )?(?:ValueError: )?'
    r"(b'(.+)'|(.+?)) : Tensor had (.+) values$")


def describe_op_error(error):
    """One line about an OpError, naming a tensor that was not finite."""
    for line in error.message.splitlines():
        match = _NOT_FINITE.match(line.strip())
        if match:
            name = match.group(3) or match.group(4)
            where = 'the gradient of ' if match.group(1) else ''
            return (
                f"{where}'{name}' had {match.group(5)} values; expected "
                'finite numbers.')
    return error_line(error)
