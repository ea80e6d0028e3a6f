"""Errors of environment workers, carried from one process to another. No
TensorFlow here: worker processes import this module.
"""

import builtins
import contextlib
import traceback


# The package's own error types that keep their type from a worker, by
# module and qualified name (`travels`).
_TRAVELLING = {}


class ExternalProcessError(RuntimeError):
    """Error of a worker process that died or raised an error of another
    type than a built-in one or one that `travels`."""


def travels(cls):
    """Class decorator: an error of `cls` (whose constructor takes one
    message) raised in a worker arrives in the parent as `cls`, where the
    parent imported its module; returns `cls`."""
    _TRAVELLING[cls.__module__, cls.__qualname__] = cls
    return cls


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
    """The parent's exception for an error raised in a worker (`where`)
    with the `error_details`: of the same built-in type or type that
    `travels`, else an `ExternalProcessError`; its message holds the
    traceback."""
    message = f'{name} in {where}:\n{stacktrace}'
    cls = _TRAVELLING.get((module, name))
    if module == 'builtins':
        cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        # One that needs other arguments falls back to our own type.
        with contextlib.suppress(Exception):
            return cls(message)
    return ExternalProcessError(message)
