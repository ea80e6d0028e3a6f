"""The child side of `ExternalProcess`: build the environment and serve it.

This module must not import TensorFlow: worker processes import it.
"""

import pickle

import cloudpickle

from agents.tools import forwarding
from agents.tools import plain_warnings
from agents.tools import worker_errors
from agents.tools import worker_process

PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Message:
    """The messages between parent and worker: integer constants."""

    ACCESS = 1
    CALL = 2
    RESULT = 3
    EXCEPTION = 4
    CLOSE = 5
    READY = 6
    CALLABLE = 7


def serve_environment(conn, constructor):
    """Build the environment, send READY, and serve the parent's messages.

    Args:
        conn: This process's end of the pipe.
        constructor: The environment constructor, pickled with cloudpickle.
    """
    worker_process.leave_stopping_to_parent(conn)
    plain_warnings.install()
    env = None
    try:
        try:
            env = cloudpickle.loads(constructor)()
            # Cloudpickle, for spaces of classes the constructor defined.
            conn.send_bytes(cloudpickle.dumps(
                (Message.READY, _describe_env(env)), PICKLE_PROTOCOL))
        except Exception as error:
            conn.send_bytes(_error_reply(error))
            return
        while True:
            data = conn.recv_bytes()
            try:
                message, payload = pickle.loads(data)
                if message == Message.CLOSE:
                    return
                reply = _handle(env, message, payload)
            except Exception as error:
                # Keep serving: a failed attribute read or step must not take
                # the environment down with it.
                reply = _error_reply(error)
            conn.send_bytes(reply)
    except (EOFError, OSError):
        pass  # The parent went away; nobody to answer.
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass  # The parent asked to close; it cannot hear us now.
        conn.close()


def _handle(env, message, payload):
    """The pickled answer to a message."""
    if message == Message.ACCESS:
        name, wrapped = payload
        result = _lookup(env, name, wrapped)
        if callable(result) and not isinstance(result, type):
            # Methods stay in the child; the parent forwards calls.
            return _reply(Message.CALLABLE, payload)
    elif message == Message.CALL:
        name, args, kwargs, wrapped = payload
        result = _lookup(env, name, wrapped)(*args, **kwargs)
    else:
        raise KeyError(
            f'Received message {message!r}; expected one of '
            f'{Message.ACCESS}, {Message.CALL} or {Message.CLOSE}.')
    return _reply(Message.RESULT, result)


def _lookup(env, name, wrapped):
    """An attribute of the environment, or with `wrapped` of its wrappers."""
    if wrapped and hasattr(env, 'get_wrapper_attr'):
        return env.get_wrapper_attr(name)
    return getattr(env, name)


def _reply(message, payload):
    """A pickled message."""
    return pickle.dumps((message, payload), PICKLE_PROTOCOL)


def _error_reply(error):
    """The pickled message of an error."""
    return _reply(Message.EXCEPTION, worker_errors.error_details(error))


def _describe_env(env):
    """Attributes the parent caches at the handshake."""
    attributes = dict(name=str(env))
    for name in ('observation_space', 'action_space', 'metadata',
                 'render_mode', 'spec'):
        value = (forwarding.spec_of(env) if name == 'spec'
                 else getattr(env, name, None))
        try:
            cloudpickle.dumps(value, PICKLE_PROTOCOL)
        except Exception:
            value = None  # Readable later through attribute access.
        attributes[name] = value
    return attributes
