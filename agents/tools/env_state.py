"""The state of gymnasium environments in this process, read and set for
an exact resumption, in JSON (loading a checkpoint constructs no objects)."""

import base64
import json

import gymnasium as gym
import numpy as np


class StateUnavailable(Exception):
    """The state of an environment cannot be read or set in this process."""


def get_state(env):
    """The state of a `gym.Env` and its wrappers: per layer, the attributes
    that are numbers, booleans, None, arrays, random generators and MuJoCo's
    data. `StateUnavailable` unless every layer is known to keep its whole
    state so (gymnasium's classic control and MuJoCo tasks, its common
    wrappers, classes with `state_in_attributes = True`)."""
    return [_layer_state(layer) for layer in _layers(env)]


def set_state(env, state):
    """Set a state of `get_state` on an environment built alike; raises as
    `get_state` does or where the wrappers differ."""
    layers = list(_layers(env))
    if len(layers) != len(state):
        raise StateUnavailable(
            f'the saved state has {len(state)} layers of wrappers; the '
            f'environment {env} has {len(layers)}')
    for layer, saved in zip(layers, state):
        for name, (kind, value) in saved.items():
            _set_attribute(layer, name, kind, value)


def encode(state):
    """UTF-8 JSON bytes of nested lists, dicts, scalars and arrays."""
    return json.dumps(_to_json(state)).encode('utf-8')


def decode(data):
    """The state of the bytes of `encode`."""
    return _from_json(json.loads(data.decode('utf-8')))


# The modules of the gymnasium classes whose whole state `get_state` reads.
_KNOWN_MODULES = (
    'gymnasium.envs.classic_control.', 'gymnasium.envs.mujoco.',
    'gymnasium.wrappers.common')


def _layers(env):
    """The environment and the environments it wraps, outermost first."""
    if not isinstance(env, gym.Env):
        raise StateUnavailable(
            f'{env!r} is not a gymnasium environment of this process')
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    for layer in layers:
        kind = type(layer)
        # Of the class: ExternalProcess forwards attributes to its worker.
        known = getattr(kind, 'state_in_attributes', False) or (
            kind.__module__ + '.').startswith(_KNOWN_MODULES)
        if not known:
            raise StateUnavailable(
                f'{kind.__name__} is not known to keep its whole state in '
                'attributes of this process')
    return layers


def _layer_state(layer):
    """The attributes of one layer that make its state, by kind."""
    state = {}
    for name, value in vars(layer).items():
        if isinstance(value, np.random.Generator):
            state[name] = ('generator', value.bit_generator.state)
        elif type(value).__name__ == 'MjData' and type(
                value).__module__.startswith('mujoco'):
            state[name] = ('physics', _physics_state(layer, value))
        elif isinstance(value, np.ndarray) and value.dtype != object:
            state[name] = ('array', value.copy())
        elif isinstance(value, np.generic):
            state[name] = ('scalar', np.asarray(value))
        elif value is None or isinstance(value, (int, float)):
            state[name] = ('value', value)
    return state


def _set_attribute(layer, name, kind, value):
    """Set one attribute that `_layer_state` read."""
    current = getattr(layer, name, None)
    if kind == 'generator':
        if not isinstance(current, np.random.Generator):
            current = np.random.Generator(
                getattr(np.random, value['bit_generator'])())
            setattr(layer, name, current)
        current.bit_generator.state = value
    elif kind == 'physics':
        _set_physics_state(layer, current, value)
    elif kind == 'array' and isinstance(current, np.ndarray) and (
            current.shape == value.shape and current.dtype == value.dtype
            and current.flags.writeable):
        # In place: other objects may hold views of it.
        current[...] = value
    elif kind == 'array':
        setattr(layer, name, np.array(value))
    elif kind == 'scalar':
        setattr(layer, name, value[()])
    else:
        setattr(layer, name, value)


def _physics_spec():
    """The mujoco module and the spec of its integration state."""
    import mujoco  # pylint: disable=import-outside-toplevel
    return mujoco, mujoco.mjtState.mjSTATE_INTEGRATION


def _physics_state(layer, data):
    """MuJoCo's integration state of the `data` of a layer."""
    mujoco, spec = _physics_spec()
    state = np.empty(mujoco.mj_stateSize(layer.model, spec), np.float64)
    mujoco.mj_getState(layer.model, data, state, spec)
    return state


def _set_physics_state(layer, data, state):
    """Set MuJoCo's integration state of `_physics_state`."""
    mujoco, spec = _physics_spec()
    if data is None or state.shape != (mujoco.mj_stateSize(layer.model, spec),):
        raise StateUnavailable(
            f'the saved physics state of {layer} does not fit its model')
    mujoco.mj_setState(layer.model, data, state, spec)


def _to_json(value):
    """A value in JSON's types, arrays and non-finite floats tagged."""
    if isinstance(value, dict):
        return {'dict': {key: _to_json(item) for key, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return {'list': [_to_json(item) for item in value]}
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        return {'array': [
            array.dtype.str, list(array.shape),
            base64.b64encode(array.tobytes()).decode('ascii')]}
    if isinstance(value, float) and not np.isfinite(value):
        # Strict JSON has no NaN and infinities.
        return {'float': repr(value)}
    return value


def _from_json(value):
    """The value of `_to_json`."""
    if isinstance(value, dict):
        if 'dict' in value:
            return {
                key: _from_json(item) for key, item in value['dict'].items()}
        if 'list' in value:
            return [_from_json(item) for item in value['list']]
        if 'float' in value:
            return float(value['float'])
        dtype, shape, data = value['array']
        return np.frombuffer(
            base64.b64decode(data), np.dtype(dtype)).reshape(shape).copy()
    return value
