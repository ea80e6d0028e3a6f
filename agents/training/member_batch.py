"""A population's Python environments: one `tools.InGraphBatchEnv` of P x
num_agents environments, member m's from `m * num_agents`, which every
member's code sees as its own batch of num_agents."""

import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import stacked_variable


class MemberBatch:
    """The members' view of a `tools.InGraphBatchEnv` (`whole`): its
    variables `[P * n, ...]` as `stacked_variable.StackedVariable`s `[P, n,
    ...]`, its length n; other attributes are the whole batch's."""

    def __init__(self, whole, size):
        """View the batch `whole` as `size` members' batches."""
        self.whole = whole
        self._size = size
        for name in ('observ', 'action', 'reward', 'done', 'truncated'):
            setattr(self, name, stacked_variable.StackedVariable(
                _Blocks(getattr(whole, name), size)))

    def __len__(self):
        """A member's environments."""
        return len(self.whole) // self._size

    def __getitem__(self, index):
        """The environment `index` of the whole batch (as `busy` names)."""
        return self.whole[index]

    def __getattr__(self, name):
        return getattr(self.whole, name)

    def rollout_env(self):
        """The loop's view (`tools.rollout_env`): the whole batch steps."""
        return _MemberRolloutEnv(self.whole.rollout_env(), self._size)


class _Blocks:
    """A variable `[P * n, ...]` read and assigned as `[P, n, ...]`."""

    def __init__(self, variable, size):
        self._variable = variable
        self.shape = tf.TensorShape(
            [size, variable.shape[0] // size]).concatenate(
                variable.shape[1:])

    @property
    def dtype(self):
        """The dtype of the variable."""
        return self._variable.dtype

    @property
    def name(self):
        """The name of the variable."""
        return self._variable.name

    def value(self):
        """The value, `[P, n, ...]`."""
        return tf.reshape(self._variable.value(), self.shape)

    def assign(self, value, **kwargs):
        """Assign a value `[P, n, ...]`."""
        return self._variable.assign(
            tf.reshape(value, self._variable.shape), **kwargs)

    def ref(self):
        """The variable's `ref()`."""
        return self._variable.ref()


class _MemberRolloutEnv:
    """A `tools.rollout_env` view of the whole batch taking and giving the
    values of the members' environments `[P, n, ...]`."""

    jit_compile = False

    def __init__(self, env, size):
        self._env = env
        self._size = size

    def initial(self):
        """The whole batch's loop state."""
        return self._env.initial()

    def assign(self, env_state):
        """The assignments of the whole batch's loop state."""
        return self._env.assign(env_state)

    def begin(self, loop_state, begin, observ):
        """Reset where `begin`, as the whole batch's `begin`."""
        loop_state, observ = self._env.begin(
            loop_state, _whole(begin), _whole(observ))
        return loop_state, self._blocks(observ)

    def step(self, loop_state, action):
        """Step the whole batch, as its `step`."""
        loop_state, *outcome = self._env.step(loop_state, _whole(action))
        return (loop_state,) + tuple(self._blocks(value) for value in outcome)

    def _blocks(self, value):
        """The whole batch's `[P * n, ...]` as `[P, n, ...]`."""
        return tf.reshape(
            value, [self._size, -1] + value.shape[1:].as_list())


def _whole(value):
    """Members' values `[P, n, ...]` as the whole batch's `[P * n, ...]`."""
    return tf.reshape(value, [-1] + value.shape[2:].as_list())
