"""PPO's loop on environments behind the numpy_function bridge: a plain
graph loop records the steps, one XLA-compiled call replays them."""

import collections

import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import ppo_step
from agents.parts import distributions
from agents.tools import compiled_ops
from agents.tools import step_records

# The state of the plain loop over environments behind the bridge (see
# `_bridge_collect`).
_Acted = collections.namedtuple('_Acted', (
    'index, env, observ, done, state, observ_statistics, counts, records'))

# How the loop runs the code of one run on the members of a population,
# stacked on the leading axis of its state: `mapped(fn, *args)` vectorized,
# `unrolled(fn, *args)` one member after another (for random draws),
# `first(structure)` the first member's values.
Members = collections.namedtuple('Members', 'mapped, unrolled, first')


def _call(function, *args):
    """The function of the arguments."""
    return function(*args)


# A single run, whose state has no member axis.
SINGLE = Members(_call, _call, lambda structure: structure)


class BridgeMixin:
    """The loop of `collect` on environments behind the bridge."""

    def _bridge_collect(
            self, carry, env, limit, first_key, num_steps, sample_seed,
            members=SINGLE):
        """`_collect_loop` on environments behind the bridge: a plain graph
        loop pays 1-3 us for every node of every step, so it only acts, steps
        and counts (to stop where the memory is full), packing each step into
        a row that a compiled loop replays. With `members` (a population's),
        the members' code runs as it says and their environments step as
        one batch."""
        # The environments' loop state is the whole batch's, no member's.
        members_carry = carry._replace(env=())
        one = members.first(members_carry)
        specs = step_records.specs(ppo_step.Step(
            observ=one.observ, action=one.action,
            policy_params=tuple(one.policy_params), state=one.state,
            nextob=one.observ, reward=one.reward, done=one.done,
            truncated=one.truncated, restarted=one.done))
        draw = self._noise_of_steps(num_steps)
        noise = members.unrolled(
            lambda seed: draw(seed, first_key), sample_seed)
        row_shape = carry.done.shape.concatenate([step_records.width(specs)])
        acted = _Acted(
            index=tf.constant(0), env=carry.env, observ=carry.observ,
            done=carry.done, state=carry.state,
            observ_statistics=carry.observ_statistics,
            counts=ppo_step.counts_of(carry), records=tf.TensorArray(
                tf.float32, size=num_steps, element_shape=row_shape))

        def _running(acted):
            return self._running(acted.index, limit, acted.counts, carry.bad)

        def _step(acted):
            def _act(observ, statistics, state, begin, noise, seed):
                return self._act(
                    observ, statistics,
                    self._step_key(seed, first_key, acted.index),
                    carry.action.dtype, ppo_step.begun(state, begin),
                    tf.gather(noise, acted.index))

            begin = acted.done
            env_state, observ = env.begin(acted.env, begin, acted.observ)
            action, policy_params, state = members.mapped(
                _act, observ, acted.observ_statistics, acted.state, begin,
                noise, sample_seed)
            env_state, nextob, reward, done, truncated, restarted = (
                env.step(env_state, action))
            counts, statistics, row = members.mapped(
                self._record, acted.counts, acted.observ_statistics, begin,
                ppo_step.Step(observ, action, policy_params, state, nextob,
                              reward, done, truncated, restarted))
            return [_Acted(
                index=acted.index + 1, env=env_state, observ=nextob,
                done=done, state=state, observ_statistics=statistics,
                counts=counts, records=acted.records.write(acted.index, row))]

        acted = tf.while_loop(
            _running, _step, [acted], maximum_iterations=num_steps)[0]
        made = acted.index
        # Rows past the steps made are zeros, so that the replay's input
        # has a static shape and compiles once.
        rows = acted.records.gather(tf.range(made))
        rows = tf.reshape(
            tf.pad(rows, [[0, num_steps - made]] + [[0, 0]] * row_shape.ndims),
            [num_steps] + row_shape.as_list())

        def _replay(carry, rows, made):
            return self._replay(carry, rows, made, specs, num_steps, members)

        replayed = compiled_ops.compiled_function(_replay)(
            members_carry, rows, made)
        # The observations, flags and loop state of the batch are those of
        # the plain loop (the rows hold observations as float32).
        return replayed._replace(
            env=acted.env, observ=acted.observ, done=acted.done)

    def _record(self, counts, observ_statistics, begin, step):
        """The counts after a step, the statistics with its observations and
        its packed row."""
        # The policy acts on the statistics of the steps before; the replay
        # merges them again (compiled, it costs next to nothing) rather than
        # record them with every row.
        counts, _ = self._count(counts, begin, step.done, step.restarted)
        return counts, self._observ_filter.merged(
            observ_statistics, step.observ), step_records.pack(step)

    def _replay(self, carry, rows, made, specs, num_steps, members):
        """PPO's step over the packed rows of the steps a loop made."""

        def _bookkeep(carry, rows):
            return self._bookkeep(carry, step_records.unpack(rows, specs))

        def _step(index, carry):
            return index + 1, members.mapped(
                _bookkeep, carry, tf.gather(rows, index))

        return tf.while_loop(
            lambda index, _: index < made, _step, [tf.constant(0), carry],
            maximum_iterations=num_steps)[1]

    def _noise_of_steps(self, num_steps):
        """The compiled function of a seed and the first key whose value is
        the noise of each step's `sample(key=...)`."""
        if self._discrete:
            policy = distributions.Categorical
            shape = [self._num_agents] + self._last_policy[0].shape[
                1:].as_list()
        else:
            policy = distributions.DiagonalGaussian
            shape = [self._num_agents, 1] + self._last_action.shape[
                1:].as_list()

        def _draw(sample_seed, first_key):
            def _step(index, noise):
                key = self._step_key(sample_seed, first_key, index)
                return index + 1, noise.write(index, policy.noise(key, shape))

            noise = tf.TensorArray(
                tf.float32, size=num_steps, element_shape=shape)
            return tf.while_loop(
                lambda index, _: index < num_steps, _step,
                [tf.constant(0), noise])[1].stack()

        return compiled_ops.compiled_function(_draw)
