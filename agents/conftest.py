"""Fixtures that tests across the package share."""

import cloudpickle
import pytest


@pytest.fixture(name='by_value')
def fixture_by_value(request):
    """Send the test module's functions to workers by value, not by import.

    Workers then receive what the test set on them, and need not import the
    test module and with it TensorFlow.
    """
    cloudpickle.register_pickle_by_value(request.module)
    yield
    cloudpickle.unregister_pickle_by_value(request.module)
