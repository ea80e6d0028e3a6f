"""The two errors that end a run (`ConfigError`: exit code 2,
`TrainingError`: 1), and how their one-line messages show values. No
TensorFlow: worker processes import this module."""

# Most characters of a value that an error line shows.
_SHOWN_CHARACTERS = 80


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


class TrainingError(RuntimeError):
    """Training stopped: an environment failed or a value was not finite."""


def shorten(text, limit=_SHOWN_CHARACTERS):
    """The text, cut to `limit` characters with '...' where longer."""
    text = str(text)
    return text if len(text) <= limit else f'{text[:limit - 3]}...'


def describe_exception(error):
    """'TypeError: message', the first line of the message, shortened."""
    lines = str(error).strip().splitlines()
    message = shorten(lines[0], 200) if lines else ''
    return f'{type(error).__name__}: {message}'.rstrip(': ') + '.'
