"""Tests of attribute forwarding's guard of private names."""

import pytest

from agents.tools import forwarding


class _Proxy:

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        forwarding.check_public(self, name)
        return getattr(self._target, name)


class _Target:
    value = 3


def test_public_names_pass_private_names_raise_python_s_error():
    proxy = _Proxy(_Target())
    assert proxy.value == 3
    with pytest.raises(AttributeError) as error:
        getattr(proxy, '_hidden')
    assert str(error.value) == "'_Proxy' object has no attribute '_hidden'"


def test_unpickling_state_is_not_looked_up_in_the_target():
    proxy = _Proxy.__new__(_Proxy)
    # `_target` is missing, as during unpickling: no recursion through it.
    with pytest.raises(AttributeError) as error:
        getattr(proxy, 'value')
    assert str(error.value) == "'_Proxy' object has no attribute '_target'"
