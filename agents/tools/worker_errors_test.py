"""Tests of the errors that workers carry to their parent process."""

import pytest

from agents.tools import worker_errors


@worker_errors.travels
class _TravellingError(ValueError):
    """An error type of the package that keeps its type from a worker."""


class _OtherError(ValueError):
    """An error type that does not travel."""


def _from_worker(error):
    """The parent's exception for `error` raised in a worker."""
    return worker_errors.worker_error(
        'worker 3', *worker_errors.error_details(error))


def test_builtin_error_keeps_its_type():
    """A built-in type arrives as itself, its message the traceback."""
    error = _from_worker(ValueError('missing'))
    assert isinstance(error, ValueError)
    assert str(error).startswith('ValueError in worker 3:\n')


def test_travelling_error_keeps_its_type():
    """A type that travels arrives as itself."""
    error = _from_worker(_TravellingError('refused'))
    assert isinstance(error, _TravellingError)
    message = str(error)
    assert message.startswith('_TravellingError in worker 3:\n')
    assert message.rstrip().endswith('_TravellingError: refused')


def test_other_error_becomes_external_process_error():
    """Another type of the package arrives as ExternalProcessError."""
    error = _from_worker(_OtherError('refused'))
    assert isinstance(error, worker_errors.ExternalProcessError)
    assert str(error).startswith('_OtherError in worker 3:\n')


def test_unknown_module_of_a_travelling_name():
    """The name alone does not travel: the module must match too."""
    error = worker_errors.worker_error(
        'worker 3', 'elsewhere', '_TravellingError', 'trace')
    assert isinstance(error, worker_errors.ExternalProcessError)
    assert str(error) == '_TravellingError in worker 3:\ntrace'


def test_travels_returns_the_class():
    """The decorator leaves the class as it was."""
    assert issubclass(_TravellingError, ValueError)
    with pytest.raises(_TravellingError, match='^refused$'):
        raise _TravellingError('refused')
