"""Errors of environment workers, carried from one process to another. No
TensorFlow here: worker processes import this module."""

import builtins
import contextlib
import traceback

# The error types of `travels`, by module and qualified name.
_TRAVELLING = {}


class ExternalProcessError(RuntimeError):
    """Error of a worker process that died or raised an error of another
    type than a built-in one or one that `travels`."""


def travels(cls):
    """Class decorator: an error of `cls` (of one message argument) raised
    in a worker arrives as `cls` in a parent that imported its module."""
    _TRAVELLING[cls.__module__, cls.__qualname__] = cls
    return cls


def timeout_error(where, seconds, consequence):
    """The `TimeoutError` of `where`, which did not answer in `seconds`."""
    return TimeoutError(
        f'{where} did not answer within {seconds:g} seconds; {consequence}.')


def error_details(error):
    """The module, qualified type name and traceback of an exception, for
    `worker_error` in another process."""
    stacktrace = ''.join(traceback.format_exception(error))
    cls = type(error)
    return cls.__module__, cls.__qualname__, stacktrace


def worker_error(where, module, name, stacktrace):
    """The parent's exception, with the traceback in its message, for an
    error of `error_details` raised in a worker (`where`): of its type where
    that is built in or `travels`, else an `ExternalProcessError`."""
    message = f'{name} in {where}:\n{stacktrace}'
    cls = _TRAVELLING.get((module, name))
    if module == 'builtins':
        cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        # One that needs other arguments falls back to our own type.
        with contextlib.suppress(Exception):
            return cls(message)
    return ExternalProcessError(message)
