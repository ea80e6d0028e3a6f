"""Tests of attribute forwarding's guard of private names."""

import collections
import warnings

import gymnasium as gym
import pytest

from agents.testing import mock_environment
from agents.tools import forwarding


class _Proxy(forwarding.Forwarding):

    def __init__(self, target):
        self._wrapped = target


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
    # `_wrapped` is missing, as during unpickling: no recursion through it.
    with pytest.raises(AttributeError) as error:
        getattr(proxy, 'value')
    assert str(error.value) == "'_Proxy' object has no attribute '_wrapped'"


def test_a_batch_wrapper_has_the_length_and_environments_of_its_batch():
    wrapper = type('Wrapper', (forwarding.BatchForwarding,), dict(
        _wrapped=['first', 'second']))()
    assert len(wrapper) == 2 and wrapper[1] == 'second'
    assert wrapper.count('first') == 1


def test_spec_of_an_old_gym_environment_is_none_without_a_warning():
    """Once gymnasium's warning `'EnvSpec' object has no attribute
    'additional_wrappers'` from every worker's handshake."""
    env = mock_environment.MockEnvironment(
        observ_shape=(2,), action_shape=(1,), min_duration=2,
        max_duration=2)
    # As shimmy's GymV21CompatibilityV0 hands on old gym's spec.
    env.spec = collections.namedtuple('EnvSpec', 'id')('OldGym-v0')
    wrapped = gym.Wrapper(env)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert forwarding.spec_of(wrapped) is None
        assert caught == []
        assert wrapped.spec is None
        assert "no attribute 'additional_wrappers'" in str(caught[0].message)
    assert forwarding.spec_of(gym.make('Pendulum-v1')).id == 'Pendulum-v1'


def test_read_only_property_reads_the_private_attribute():
    class _Holder:
        value = forwarding.read_only('value', 'The value.')

        def __init__(self):
            self._value = 7

    holder = _Holder()
    assert holder.value == 7
    assert _Holder.value.__doc__ == 'The value.'
    with pytest.raises(AttributeError):
        holder.value = 8
