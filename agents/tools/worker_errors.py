"""Errors of environment workers, carried from one process to another.

This module must not import TensorFlow: worker processes import it.
"""

import builtins
import traceback


class ExternalProcessError(RuntimeError):
    """Error of a worker process that died or raised a non-builtin error."""



def timeout_error(where, seconds, consequence):
    """The error of an environment that did not answer in time.

    Args:
        where: Description of the environment, such as 'Environment worker
            ... (pid 123)'.
        seconds: The timeout that passed.
        consequence: What became of it, such as 'it was terminated'.

    Returns:
        `TimeoutError` with a one-line message.
    """
    return TimeoutError(
        f'{where} did not answer within {seconds:g} seconds; {consequence}.')


def error_details(error):
    """Describe an exception so that another process can raise it again.

    Args:
        error: The exception.

    Returns:
        Tuple of the module and qualified name of its type and its formatted
        traceback, the arguments of `worker_error`.
    """
    stacktrace = ''.join(traceback.format_exception(error))
    cls = type(error)
    return cls.__module__, cls.__qualname__, stacktrace


def worker_error(where, module, name, stacktrace):
    """Build the parent's exception for an error raised in a worker.

    Args:
        where: Description of the worker that opens the message.
        module: Module of the type of the error, from `error_details`.
        name: Qualified name of the type of the error.
        stacktrace: The formatted traceback of the error.

    Returns:
        An exception of the same type for built-in types that take a
        message, else an `ExternalProcessError`, whose message holds the
        traceback.
    """
    message = f'{name} in {where}:\n{stacktrace}'
    cls = getattr(builtins, name, None) if module == 'builtins' else None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass  # Needs other arguments; fall back to our own type.
    return ExternalProcessError(message)
