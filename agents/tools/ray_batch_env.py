"""A batch stepped in slices by Ray actors. Ray (extra `ray`) is imported
when a batch is created; TensorFlow never (actors import this)."""

import contextlib
import os

from agents.tools import env_registry
from agents.tools import env_slice
from agents.tools import env_state
from agents.tools import external_process
from agents.tools import forwarding
from agents.tools import mujoco_warnings
from agents.tools import plain_warnings
from agents.tools import worker_errors
from agents.tools import sliced_batch_env

_from_handshake = external_process.handshake_property


def import_ray():
    """The `ray` module; an ImportError names the `ray` extra."""
    try:
        import ray  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError(
            "Ray is not installed; install the 'ray' extra: "
            "pip install -e '.[ray]'") from error
    return ray


class RayBatchEnv(sliced_batch_env.SlicedBatchEnv):
    """`SlicedBatchEnv` with Ray actors in place of worker processes.

    A dead actor (or node) raises an `ExternalProcessError`, one that does
    not answer in time is killed and raises a `TimeoutError`. Ray starts
    here unless running (`RAY_ADDRESS`'s cluster, else a local one).

    Args:
        num_actors: Number of actors, at most one per environment; None:
            one per free CPU of the cluster, at least one.
        timeout: Seconds an actor may take to answer (at least 60 to
            build); None: 600.
        actor_options: Ray actor options; default one CPU each, 'SPREAD'.

    Raises:
        ImportError: When Ray is not installed; else as `SlicedBatchEnv`.
    """

    def __init__(
            self, constructors, num_actors=None, restart=False, timeout=None,
            actor_options=None):
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(include_dashboard=False, logging_level='ERROR')
        options = dict(num_cpus=1, scheduling_strategy='SPREAD')
        options.update(actor_options or {})
        self._actor_options = options
        self._actor_class = ray.remote(_SliceActor)
        if num_actors is None:
            free = ray.available_resources().get('CPU', 0)
            num_actors = max(1, int(free / max(options['num_cpus'], 1e-3)))
        super().__init__(
            constructors, num_workers=num_actors, restart=restart,
            timeout=timeout)

    def get_env_state(self):
        """Raise `env_state.StateUnavailable`: the states are on the nodes."""
        raise env_state.StateUnavailable(
            'the environments of Ray actors keep their state on the nodes '
            'of the cluster, out of reach of checkpoints')

    def _start(self, worker):
        """Start the actor of slice `worker`; it builds in turn."""
        start, stop = self._bounds[worker]
        return _ActorWorker(
            self._actor_class.options(**self._actor_options),
            self._payloads[worker], start, stop, self._timeout)


class _ActorWorker(external_process.WorkerProxy):
    """The actor of one slice, with the interface of an `ExternalProcess`."""

    def __init__(self, actor_class, payload, start, stop, timeout):
        constructor = env_slice.SliceConstructor(payload, start, stop)
        super().__init__(constructor, timeout)
        self._ray = import_ray()
        # With the environment ids and MuJoCo warnings of this process.
        self._actor = actor_class.remote(env_registry.WithRegistry(
            mujoco_warnings.WithSeen(constructor)))
        self._ready = self._actor.start.remote()
        self._closed = False

    pid = _from_handshake('pid', 'Process id of the actor on its node.')
    node_id = _from_handshake(
        'node', 'Ray node id of the node the actor runs on.')
    observation_space = _from_handshake(
        'observation_space', "Observation space of the slice's environments.")
    action_space = _from_handshake(
        'action_space', "Action space of the slice's environments.")

    def step(self, actions, blocking=True):
        """Step the slice; return its `StepBatch` or a promise of it."""
        return self._request(('step', (actions,), {}), blocking)

    def reset(self, *, seed=None, options=None, blocking=True):
        """Reset the slice; return observations and info, or a promise."""
        return self._request(
            ('reset', (), dict(seed=seed, options=options)), blocking)

    def call(self, name, *args, **kwargs):
        """Call a method of the slice in the actor and return its value."""
        return self._request((name, args, kwargs))

    def __repr__(self):
        if self._handshake is None:
            return f'<Ray actor of the {self._name}>'
        return (f'<Ray actor pid={self.pid} node={self.node_id[:8]} '
                f'env={self._name}>')

    def _describe(self):
        """The actor and, once started, its pid and node."""
        return f'Ray actor of the {self._name}' + (
            '' if self._handshake is None
            else f' (pid {self.pid} on node {self.node_id[:8]})')

    def _submit(self, request):
        """Call the slice's method of `request`; the reference of its value."""
        name, args, kwargs = request
        return self._actor.call.remote(name, *args, **kwargs)

    def _wait(self, ticket, seconds):
        """The `(ok, value)` of an actor call (None: the start)."""
        ray = self._ray
        try:
            return ray.get(self._ready if ticket is None else ticket,
                           timeout=seconds)
        except ray.exceptions.GetTimeoutError:
            what = 'did not start' if ticket is None else 'did not answer'
            hint = (' (the Ray cluster may have no free resources for it)'
                    if ticket is None else '')
            raise self._fail(TimeoutError(
                f'{self._describe()} {what} within {seconds:g} seconds'
                f'{hint}; it was killed.')) from None
        except ray.exceptions.RayActorError as error:
            raise self._died(_death_cause(error)) from None
        except ray.exceptions.RayTaskError as error:
            # A failure of the actor's own code outside the environments.
            cause = error.cause if error.cause is not None else error
            return False, worker_errors.error_details(cause)

    def _shutdown(self, seconds):
        """Close the slice's environments, then kill the actor."""
        if seconds:
            with contextlib.suppress(Exception):  # Killed below either way.
                self._ray.get(
                    self._actor.call.remote('close'), timeout=seconds)
        # Ray may be shut down already, which ended the actor.
        with contextlib.suppress(Exception):
            self._ray.kill(self._actor)


def _death_cause(error):
    """One line on why Ray says an actor died."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if line.startswith('The actor is dead because'):
            return line.rstrip('.')
    return lines[0].rstrip('.') if lines else type(error).__name__


class _SliceActor:
    """A slice in a Ray actor; methods return (ok, value or error details)."""

    def __init__(self, constructor):
        self._constructor = constructor
        self._slice = None

    def start(self):
        """Build the slice; its pid, node id and spaces as `handshake`."""
        plain_warnings.install()
        try:
            self._slice = self._constructor()
        except Exception as error:
            return False, worker_errors.error_details(error)
        return True, dict(
            pid=os.getpid(),
            node=import_ray().get_runtime_context().get_node_id(),
            observation_space=self._slice.observation_space,
            action_space=self._slice.action_space)

    def call(self, name, *args, **kwargs):
        """Call a public method of the slice, such as `step`."""
        try:
            forwarding.check_public(self._slice, name)
            return True, getattr(self._slice, name)(*args, **kwargs)
        except Exception as error:
            return False, worker_errors.error_details(error)
