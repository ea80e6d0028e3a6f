"""Errors of environment workers, carried from one process to another.

This module must not import TensorFlow: worker processes import it.
"""

import builtins
import traceback


class ExternalProcessError(RuntimeError):
    """Error of a worker process that died or raised a non-builtin error."""


def check_open(failure, closed, describe):
    """Raise `failure`, the error that ended a worker, or else where the
    worker is `closed` a RuntimeError naming it (`describe()`)."""
    if failure:
        raise failure
    if closed:
        raise RuntimeError(f'{describe()} is closed.')


def timeout_error(where, seconds, consequence):
    """One-line `TimeoutError` of an environment (`where`) that did not
    answer within `seconds`, and what became of it (`consequence`)."""
    return TimeoutError(
        f'{where} did not answer within {seconds:g} seconds; {consequence}.')


def error_details(error):
    """The module, qualified type name and formatted traceback of an
    exception, for `worker_error` in another process."""
    stacktrace = ''.join(traceback.format_exception(error))
    cls = type(error)
    return cls.__module__, cls.__qualname__, stacktrace


def worker_error(where, module, name, stacktrace):
    """The parent's exception for an error raised in a worker.

    Args:
        where: Description of the worker that opens the message.
        module, name, stacktrace: As from `error_details`.

    Returns:
        An exception of the same built-in type, else an
        `ExternalProcessError`; its message holds the traceback.
    """
    message = f'{name} in {where}:\n{stacktrace}'
    cls = getattr(builtins, name, None) if module == 'builtins' else None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass  # Needs other arguments; fall back to our own type.
    return ExternalProcessError(message)
