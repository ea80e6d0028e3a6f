"""Step an environment in a child process (`serve_environment`) as if it
were local, by the messages of `worker_messages` over a pipe. No
TensorFlow here: worker processes import this module."""

import atexit
import contextlib
import functools
import math
import multiprocessing
import pickle
import select
import signal
import time
import weakref

import cloudpickle
import gymnasium as gym
import numpy as np

from agents.tools import env_registry
from agents.tools import env_slice
from agents.tools import forwarding
from agents.tools import mujoco_warnings
from agents.tools import plain_warnings
from agents.tools import run_errors
from agents.tools import worker_errors
from agents.tools import worker_messages
from agents.tools import worker_pickle
from agents.tools import worker_process

# Seconds a worker may take to answer, unless told otherwise.
DEFAULT_TIMEOUT = 600.0
MIN_STARTUP_SECONDS = 60.0
_POLL_SECONDS = 0.1
_CLOSE_SECONDS = 5.0
# Where wrappers and the tests import the error type from.
ExternalProcessError = worker_errors.ExternalProcessError
Message = worker_messages.Message
# The arrays and scalars leading a step's and a reset's result.
_RESULT_LAYOUTS = {5: (1, 3), 2: (1, 0)}


def handshake_property(key, doc):
    """A property of a worker's proxy read from `proxy.handshake()`."""
    return property(lambda proxy: proxy.handshake().get(key), doc=doc)


class WorkerProxy:  # pylint: disable=no-member
    """What the proxies of a worker share (`ExternalProcess`, the actors of
    `RayBatchEnv`): they wait for its handshake, send requests answered at
    once or by a promise, and keep the error that ended it for every later
    call. Subclasses define `_describe()`, `_submit(request)` (a ticket),
    `_wait(ticket, seconds)` (the answer's `(ok, value or error_details)`;
    ticket None: the start's) and `_shutdown(seconds)`. A ValueError for a
    `timeout` (None: 600 seconds) that is not positive."""

    # Class defaults keep `close` and `__del__` safe when `__init__` fails.
    _closed = True
    _failure = None
    _handshake = None

    def __init__(self, constructor, timeout):
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        if math.isnan(timeout) or timeout <= 0:
            raise ValueError(
                f'timeout must be a positive number of seconds, got '
                f'{timeout!r}.')
        self._timeout = float(timeout)
        self._name = run_errors.shorten(
            getattr(constructor, '__qualname__', None) or repr(constructor))

    def handshake(self):
        """What the worker sent once it started; waits for it."""
        if self._handshake is None:
            self._handshake = self._answer(None)
        return self._handshake

    def close(self):
        """Close the environment and end the worker; idempotent."""
        self._end(_CLOSE_SECONDS)

    def _request(self, request, blocking=True):
        """Send a request; its answer, or a promise of it."""
        self.handshake()
        self._check_open()
        ticket = self._submit(request)
        return self._answer(ticket) if blocking else functools.partial(
            self._answer, ticket)

    def _answer(self, ticket):
        """The value answering `ticket`; the worker's error raises."""
        self._check_open()
        starting = self._handshake is None
        ok, value = self._wait(ticket, max(
            self._timeout, MIN_STARTUP_SECONDS) if starting else self._timeout)
        if ok:
            return value
        error = worker_errors.worker_error(self._describe(), *value)
        raise self._fail(error) if starting else error

    def _check_open(self):
        """Raise the error that ended the worker, or that it is closed."""
        if self._failure:
            raise self._failure
        if self._closed:
            raise RuntimeError(f'{self._describe()} is closed.')

    def _end(self, seconds):
        """End the worker, waiting up to `seconds` for it; idempotent."""
        if not self._closed:
            self._closed = True
            self._shutdown(seconds)

    def _fail(self, error):
        """Keep `error` for every later call, end the worker, return it."""
        self._failure = error
        self._end(0)
        return error

    def _died(self, reason):
        """The error of a worker that died (`reason`), kept by `_fail`."""
        return self._fail(worker_errors.ExternalProcessError(
            f'{self._describe()} died ({reason}); create a new environment '
            'to continue.'))


class ExternalProcess(WorkerProxy, gym.Env):
    """Environment that lives in a child process.

    Public attributes and methods are forwarded to the child; assignments
    stay in the parent, and `unwrapped` is the proxy. The first call waits
    for the child's handshake (spaces, metadata, render mode and spec).
    Errors come back with the child's traceback; a worker that dies or times
    out raises. The worker ignores SIGINT and SIGTERM, so that the parent
    can save and close it, and exits with its parent.
    """

    _process = None
    _atexit_hook = None

    def __init__(
            self, constructor, start_method=None, timeout=None,
            main_module=True):
        """Start a child process that builds the environment.

        Args:
            start_method: 'fork', 'spawn' or 'forkserver' (None: the last
                where available, else 'spawn').
            timeout: Seconds to wait for an answer (then `TimeoutError`), at
                least 60 for the constructor; None means 600.
            main_module: Whether the child imports the parent's main module.

        Raises:
            TypeError: When `constructor` is an environment or not callable.
            ValueError: For an unknown `start_method` or a bad `timeout`.
        """
        if isinstance(constructor, gym.Env):
            raise TypeError(
                'ExternalProcess needs a callable that constructs the '
                f'environment, got the environment instance {constructor!r};'
                ' pass e.g. `lambda: env_constructor(...)` instead.')
        if not callable(constructor):
            raise TypeError(
                'ExternalProcess needs a callable that constructs the '
                f'environment, got {constructor!r}.')
        methods = multiprocessing.get_all_start_methods()
        if start_method is None:
            start_method = 'forkserver' if 'forkserver' in methods else 'spawn'
        if start_method not in methods:
            raise ValueError(
                f'Unknown start method {start_method!r}; expected one of '
                f'{methods}.')
        super().__init__(constructor, timeout)
        self._sent = self._received = 0
        context = multiprocessing.get_context(start_method)
        self._conn, worker_conn = context.Pipe()
        self._channel = worker_messages.Channel(self._conn)
        self._poller = select.poll()
        self._poller.register(self._conn.fileno(), select.POLLIN)
        # Daemonic, so that multiprocessing ends the worker should the parent
        # exit without closing it (the environment cannot start children).
        self._process = context.Process(
            target=serve_environment, args=(
                worker_conn,
                # With the ids this process registered and the MuJoCo
                # warnings it showed; without the TensorFlow modules.
                worker_pickle.dumps(env_registry.WithRegistry(
                    mujoco_warnings.WithSeen(constructor)))),
            daemon=True)
        worker_process.start(
            self._process, context, main_module=main_module, preload=__name__)
        # Only the child holds its end, so the parent sees it die at once.
        worker_conn.close()
        self._closed = False
        # Weak, so that the hook keeps no collected environment alive.
        self._atexit_hook = functools.partial(_close_ref, weakref.ref(self))
        atexit.register(self._atexit_hook)

    pid = property(lambda self: self._process.pid, doc="The child's pid.")

    observation_space = handshake_property(
        'observation_space', 'Observation space of the environment.')
    action_space = handshake_property(
        'action_space', 'Action space of the environment.')
    metadata = handshake_property('metadata', 'Metadata of the environment.')
    render_mode = handshake_property(
        'render_mode', 'Render mode of the environment.')
    spec = handshake_property('spec', 'Spec of the environment.')

    np_random = property(
        lambda self: self._access('np_random'),
        doc='A copy of the random generator of the environment in the child.')
    # Gymnasium's env checker reads it as `_np_random`.
    _np_random = np_random
    np_random_seed = property(
        lambda self: self._access('np_random_seed'),
        doc='The seed of the random generator of the environment in the child.')

    def __getattr__(self, name):
        """Read a public attribute in the child; methods are called there."""
        forwarding.check_public(self, name)
        return self._access(name)

    def get_wrapper_attr(self, name):
        """Run `get_wrapper_attr` of a public name in the child (a method
        comes as a function calling it there)."""
        forwarding.check_public(self, name)
        return self._access(name, wrapped=True)

    def has_wrapper_attr(self, name):
        """Run `has_wrapper_attr` in the child; False for private names."""
        return not name.startswith('_') and self.call('has_wrapper_attr', name)

    def set_wrapper_attr(self, name, value, *, force=True):
        """Run `set_wrapper_attr` in the child; whether it set the value."""
        forwarding.check_public(self, name)
        return self.call('set_wrapper_attr', name, value, force=force)

    def call(self, name, *args, **kwargs):
        """Call the method `name` in the child; arguments go by cloudpickle."""
        return self._call(name, args, kwargs)

    def _call(self, name, args, kwargs, wrapped=False, blocking=True,
              data=None, dumps=cloudpickle.dumps):
        """Call a method in the child (or send `data`); value or promise."""
        return self._request(data or dumps(
            (Message.CALL, (name, args, kwargs, wrapped))), blocking)

    def step(self, action, blocking=True):
        """Step the environment in the child; with `blocking` False, return
        a promise of the result (call promises once, in order), so that a
        batch sends every action before waiting."""
        array = type(action) is np.ndarray  # pylint: disable=C0123
        return self._call(
            'step', (action,), {}, blocking=blocking,
            dumps=worker_messages.dumps, data=worker_messages.frame(
                Message.STEP, (action,), array, not array))

    def reset(self, *, seed=None, options=None, blocking=True):
        """Reset the environment in the child, or promise to, as `step`."""
        return self._call('reset', (), dict(seed=seed, options=options),
                          blocking=blocking, dumps=worker_messages.dumps)

    def render(self):
        """Render the environment in the child and return the result."""
        return self.call('render')

    def __del__(self):
        # No module globals here: at exit they may be gone already.
        try:
            self.close()
        except Exception:
            pass  # Nobody to report to.

    def __repr__(self):
        pid = self._process.pid if self._process else None
        return f'<ExternalProcess pid={pid} env={self._name}>'

    __str__ = __repr__

    def _access(self, name, wrapped=False):
        """Read an attribute in the child."""
        return self._request(worker_messages.dumps(
            (Message.ACCESS, (name, wrapped))))

    def _describe(self):
        """The worker and its process id."""
        return f'Environment worker {self._name} (pid {self._process.pid})'

    def _submit(self, request):
        """Send the message `request`; return the ticket of its answer."""
        try:
            self._channel.send(request)
        except (OSError, ValueError):
            raise self._exited() from None
        self._sent += 1
        return self._sent

    def _wait(self, ticket, seconds):
        """Wait for the answer to request `ticket`, or None for READY."""
        if ticket is not None and ticket != self._received + 1:
            raise RuntimeError(
                f'Promise {ticket} of {self._describe()} called out of '
                f'order: {self._received} answers received of {self._sent} '
                'requests; call each promise once, in order.')
        # Wait in short slices so that a dead or stuck child is noticed.
        deadline = None
        while not (self._channel.pending()
                   or self._poller.poll(_POLL_SECONDS * 1000)):
            if not self._process.is_alive():
                raise self._exited()
            if deadline is None:
                deadline = time.monotonic() + seconds - _POLL_SECONDS
            elif time.monotonic() > deadline:
                raise self._fail(worker_errors.timeout_error(
                    self._describe(), seconds, 'it was terminated'))
        try:
            data = self._channel.receive()
        except (EOFError, OSError):
            raise self._exited() from None
        self._received += ticket is not None
        if data[0] == Message.STEP_RESULT:
            return True, tuple(worker_messages.unframe(data)[1])
        if data[0] == Message.BATCH_RESULT:
            return True, env_slice.StepBatch(*worker_messages.unframe(data)[1])
        message, payload = pickle.loads(data)
        if message == Message.CALLABLE:
            name, wrapped = payload
            return True, lambda *args, **kwargs: self._call(
                name, args, kwargs, wrapped)
        if message == Message.READY:
            self._name = payload.pop('name')
        return message != Message.EXCEPTION, payload

    def _exited(self):
        """The error of a child that exited (`WorkerProxy._died`)."""
        worker_process.reap(self._process, 1.0)
        code = self._process.exitcode
        reason = f'exit code {code}'
        if code is not None and code < 0:
            try:
                reason += f', killed by {signal.Signals(-code).name}'
            except ValueError:
                reason += f', killed by signal {-code}'
        return self._died(reason)

    def _shutdown(self, seconds):
        """Ask the child to exit, wait for it, then terminate it."""
        if self._atexit_hook is not None:
            atexit.unregister(self._atexit_hook)
            self._atexit_hook = None
        if seconds:
            # The child may be gone or its pipe broken; reaped below.
            with contextlib.suppress(OSError, ValueError):
                self._channel.send(
                    worker_messages.dumps((Message.CLOSE, None)))
        worker_process.reap(self._process, seconds)
        self._conn.close()


def _close_ref(ref):
    """Close the environment of a weak reference, if it still lives."""
    env = ref()
    if env is not None:
        env.close()


def serve_environment(conn, constructor):
    """Build the environment of the cloudpickled `constructor`, send
    READY, and serve the parent's messages on this end of the pipe."""
    worker_process.leave_stopping_to_parent(conn)
    plain_warnings.install()
    env, channel = None, worker_messages.Channel(conn)
    try:
        try:
            env = cloudpickle.loads(constructor)()
            # Cloudpickle, for spaces of classes the constructor defined.
            channel.send(cloudpickle.dumps(
                (Message.READY, _describe_env(env))))
        except Exception as error:
            channel.send(worker_messages.dumps(
                (Message.EXCEPTION, worker_errors.error_details(error))))
            return
        while True:
            data = channel.receive()
            try:
                if data[0] == Message.STEP:
                    reply = _reply(
                        'step', env.step(*worker_messages.unframe(data)[1]))
                else:
                    message, payload = pickle.loads(data)
                    if message == Message.CLOSE:
                        return
                    reply = _handle(env, message, payload)
            except Exception as error:
                # Keep serving: a failed attribute read or step must not take
                # the environment down with it.
                reply = worker_messages.dumps(
                    (Message.EXCEPTION, worker_errors.error_details(error)))
            channel.send(reply)
    except (EOFError, OSError):
        pass  # The parent went away; nobody to answer.
    finally:
        if env is not None:
            # The parent asked to close; it cannot hear us now.
            with contextlib.suppress(Exception):
                env.close()
        conn.close()


def _handle(env, message, payload):
    """The answer to a pickled message."""
    if message == Message.ACCESS:
        name, wrapped = payload
        result = _lookup(env, name, wrapped)
        if callable(result) and not isinstance(result, type):
            # Methods stay in the child; the parent forwards calls.
            return worker_messages.dumps((Message.CALLABLE, payload))
        return worker_messages.dumps((Message.RESULT, result))
    name, args, kwargs, wrapped = payload
    return _reply(name, _lookup(env, name, wrapped)(*args, **kwargs))


def _reply(name, result):
    """The answer of a result of `name`: a frame of a step's or a reset's."""
    frame = None
    if type(result) is env_slice.StepBatch:  # pylint: disable=C0123
        frame = worker_messages.frame(Message.BATCH_RESULT, result, 5, 0)
    elif name in ('step', 'reset') and type(result) is tuple and (  # pylint: disable=C0123
            len(result) in _RESULT_LAYOUTS):
        frame = worker_messages.frame(
            Message.STEP_RESULT, result, *_RESULT_LAYOUTS[len(result)])
    return frame or worker_messages.dumps((Message.RESULT, result))


def _lookup(env, name, wrapped):
    """An attribute of the environment, or with `wrapped` of its wrappers."""
    if wrapped and hasattr(env, 'get_wrapper_attr'):
        return env.get_wrapper_attr(name)
    return getattr(env, name)


def _describe_env(env):
    """Attributes the parent caches at the handshake."""
    attributes = dict(name=str(env))
    for name in ('observation_space', 'action_space', 'metadata',
                 'render_mode', 'spec'):
        value = (forwarding.spec_of(env) if name == 'spec'
                 else getattr(env, name, None))
        try:
            cloudpickle.dumps(value)
        except Exception:
            value = None  # Readable later through attribute access.
        attributes[name] = value
    return attributes
