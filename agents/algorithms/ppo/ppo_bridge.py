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


class BridgeMixin:
    """The loop of `collect` on environments behind the bridge."""

    def _bridge_collect(
            self, carry, env, limit, first_key, num_steps, sample_seed):
        """`_collect_loop` on environments behind the bridge: a plain graph
        loop pays 1-3 us for every node of every step, so it only acts, steps
        and counts (to stop where the memory is full), packing each step into
        a row that a compiled loop replays."""
        specs = step_records.specs(ppo_step.Step(
            observ=carry.observ, action=carry.action,
            policy_params=tuple(carry.policy_params), state=carry.state,
            nextob=carry.observ, reward=carry.reward, done=carry.done,
            truncated=carry.truncated, restarted=carry.done))
        noise = self._noise_of_steps(sample_seed, first_key, num_steps)
        acted = _Acted(
            index=carry.index, env=carry.env, observ=carry.observ,
            done=carry.done, state=carry.state,
            observ_statistics=carry.observ_statistics,
            counts=ppo_step.counts_of(carry),
            records=tf.TensorArray(
                tf.float32, size=num_steps, element_shape=[
                    self._num_agents, step_records.width(specs)]))

        def _running(acted):
            return self._running(acted.index, limit, acted.counts, carry.bad)

        def _step(acted):
            begin = acted.done
            env_state, observ = env.begin(acted.env, begin, acted.observ)
            action, policy_params, state = self._act(
                observ, acted.observ_statistics,
                self._step_key(sample_seed, first_key, acted.index),
                carry.action.dtype, ppo_step.begun(acted.state, begin),
                tf.gather(noise, acted.index))
            env_state, nextob, reward, done, truncated, restarted = (
                env.step(env_state, action))
            counts, _ = self._count(acted.counts, begin, done, restarted)
            step = ppo_step.Step(
                observ, action, policy_params, state, nextob, reward, done,
                truncated, restarted)
            # The policy acts on the statistics of the steps before; the
            # replay merges them again (compiled, it costs next to nothing)
            # rather than record them with every row.
            return [_Acted(
                index=acted.index + 1, env=env_state, observ=nextob,
                done=done, state=state,
                observ_statistics=self._observ_filter.merged(
                    acted.observ_statistics, observ),
                counts=counts, records=acted.records.write(
                    acted.index, step_records.pack(step)))]

        acted = tf.while_loop(
            _running, _step, [acted], maximum_iterations=num_steps)[0]
        made = acted.index
        # Rows past the steps made are zeros, so that the replay's input
        # has a static shape and compiles once.
        rows = acted.records.gather(tf.range(made))
        rows = tf.reshape(
            tf.pad(rows, [[0, num_steps - made], [0, 0], [0, 0]]),
            [num_steps, self._num_agents, step_records.width(specs)])

        def _replay(carry, rows, made):
            return self._replay(carry, rows, made, specs, num_steps)

        replayed = compiled_ops.compiled_function(_replay)(carry, rows, made)
        # The observations, flags and loop state of the batch are those of
        # the plain loop (the rows hold observations as float32).
        return replayed._replace(
            env=acted.env, observ=acted.observ, done=acted.done)

    def _replay(self, carry, rows, made, specs, num_steps):
        """PPO's step over the packed rows of the steps a loop made."""

        def _step(carry):
            step = step_records.unpack(tf.gather(rows, carry.index), specs)
            return [self._bookkeep(carry, step)]

        return tf.while_loop(
            lambda carry: carry.index < made, _step, [carry],
            maximum_iterations=num_steps)[0]

    def _noise_of_steps(self, sample_seed, first_key, num_steps):
        """The noise of each step's `sample(key=...)`, in one compiled call."""
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

        return compiled_ops.compiled_function(_draw)(
            sample_seed, first_key)
