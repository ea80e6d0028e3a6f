"""The child side of `ExternalProcess`: build the environment and serve it.

This module must not import TensorFlow: worker processes import it.
"""

import pickle

import cloudpickle

from agents.tools import forwarding
from agents.tools import message_frames
from agents.tools import plain_warnings
from agents.tools import worker_errors
from agents.tools import worker_process

PICKLE_PROTOCOL = message_frames.PICKLE_PROTOCOL
# The first byte of a pickle, which no message constant equals.
PICKLE_OPCODE = 0x80


class Message:
    """The messages between parent and worker: integer constants."""

    ACCESS = 1
    CALL = 2
    RESULT = 3
    EXCEPTION = 4
    CLOSE = 5
    READY = 6
    STEP = 7
    RESET = 8
    CALLABLE = 9
    # Binary frames of the hot path; see `external_process`.
    STEP_ARRAY = 10
    STEP_INTEGER = 11
    STEP_RESULT = 12
    STEP_BATCH_RESULT = 13
    WRAPPER_ACCESS = 14


def serve_environment(conn, constructor):
    """Build the environment, send READY, and serve the parent's messages.

    Args:
        conn: This process's end of the pipe.
        constructor: The environment constructor, pickled with cloudpickle.
    """
    worker_process.leave_stopping_to_parent(conn)
    plain_warnings.install()
    env = None
    channel = message_frames.Channel(conn)
    try:
        try:
            env = cloudpickle.loads(constructor)()
            # Cloudpickle, for spaces of classes the constructor defined.
            channel.send(cloudpickle.dumps(
                (Message.READY, _describe_env(env)), PICKLE_PROTOCOL))
        except Exception as error:
            channel.send(*_error_reply(error))
            return
        _serve(channel, env)
    except (EOFError, OSError):
        pass  # The parent went away; nobody to answer.
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass  # The parent asked to close; it cannot hear us now.
        conn.close()


def _serve(channel, env):
    """Answer messages until the parent asks to close or goes away."""
    recv_bytes, send_bytes = channel.receive, channel.send
    step_array, step_integer = Message.STEP_ARRAY, Message.STEP_INTEGER
    while True:
        # Pipe errors end the loop; errors of the environment are answers.
        data = recv_bytes()
        kind = data[0]
        try:
            if kind == step_array:
                action, _ = message_frames.unpack_array(data, 1)
                reply = _step_reply(env.step(action))
            elif kind == step_integer:
                reply = _step_reply(env.step(
                    message_frames.unpack_integer(data)))
            else:
                reply = _handle(env, data)
        except Exception as error:
            # Keep serving: a failed attribute read or step must not take the
            # environment down with it.
            reply = _error_reply(error)
        if reply is None:
            return
        send_bytes(*reply)


def _handle(env, data):
    """Parts of the answer to a pickled message; None to close."""
    if data[0] != PICKLE_OPCODE:
        raise KeyError(
            f'Received frame {data[0]!r}; expected {Message.STEP_ARRAY}, '
            f'{Message.STEP_INTEGER} or a pickled message.')
    message, payload = pickle.loads(data)
    if message == Message.STEP:
        return _step_reply(env.step(payload))
    if message == Message.CLOSE:
        return None
    if message == Message.RESET:
        seed, options = payload
        result = env.reset(seed=seed, options=options)
    elif message in (Message.ACCESS, Message.WRAPPER_ACCESS):
        wrapped = message == Message.WRAPPER_ACCESS
        result = _lookup(env, payload, wrapped)
        if callable(result) and not isinstance(result, type):
            # Methods stay in the child; the parent forwards calls.
            return _reply(Message.CALLABLE, (payload, wrapped))
    elif message == Message.CALL:
        name, args, kwargs, wrapped = payload
        result = _lookup(env, name, wrapped)(*args, **kwargs)
    else:
        raise KeyError(
            f'Received message {message!r}; expected one of '
            f'{Message.ACCESS}, {Message.WRAPPER_ACCESS}, {Message.CALL}, '
            f'{Message.STEP}, {Message.RESET} or {Message.CLOSE}.')
    return _reply(Message.RESULT, result)


def _lookup(env, name, wrapped):
    """An attribute of the environment, or with `wrapped` of its wrappers."""
    if wrapped and hasattr(env, 'get_wrapper_attr'):
        return env.get_wrapper_attr(name)
    return getattr(env, name)


def _step_reply(result):
    """Parts of the answer to a step: a frame, or else a pickle."""
    if type(result) is message_frames.StepBatch:  # pylint: disable=C0123
        parts = message_frames.pack_step_batch(
            Message.STEP_BATCH_RESULT, result)
    else:
        parts = message_frames.pack_step(Message.STEP_RESULT, result)
    return parts or _reply(Message.RESULT, result)


def _reply(message, payload):
    """The parts of the answer of a pickled message."""
    return (pickle.dumps((message, payload), PICKLE_PROTOCOL),)


def _error_reply(error):
    """The parts of the answer of an error."""
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
