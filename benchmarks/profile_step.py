r"""Where the time of one fused simulation step goes, on Pendulum-v1.

Times, per batch step of 16 environments (the pendulum config's batch), with
the environments in this process and in ExternalProcess workers:

  (i)    session.run of a no-op graph, without and with three feeds (what
         the training loop passed before its switches became variables),
         and through Session.make_callable: the overhead floor of a call
  (ii)   InGraphBatchEnv.simulate alone (numpy_function + checks + assigns)
  (iii)  the batch's step alone, in Python: the environments under the
         batch wrappers that training applies, the same environments with
         the wrappers applied per environment (as before), and the same
         number of gymnasium environments without our wrappers
  (iv)   the fused tools.simulate op with tools.MockAlgorithm (which records
         its calls through numpy_functions of its own), and with a trivial
         algorithm of plain graph ops (MockAlgorithm(record=False)) through
         Session.make_callable: simulate's own cost
  (v)    the fused op with PPO acting greedily (evaluation: network
         inference) and sampling while training, on steps without update,
         through Session.make_callable without feeds, as tools.Loop runs it;
         acting greedily also in the calling thread (RunOptions
         inter_op_thread_pool=-1), as the evaluation phase of training runs
  (vi)   one PPO update: the step that completes the 16 episodes and trains
         (10 epochs of 8 mini-batches) minus a training step without update

With `--modes=graph`, the batch is the in-graph task (`--env_mode=graph`,
`environments.InGraphTaskBatch` under the standard wrappers as graph ops):
(ii) is its `simulate` alone, one fused step of TensorFlow ops per session
call, and (iii) and the MockAlgorithm row, which need Python environments,
are left out. The graph build and the first call (which compiles the
task's XLA reset) are timed too ("first call").

Each measurement runs whole episodes of 200 steps that begin with an
untimed forced reset, and the measurements take turns episode by episode,
rotating their order, so that load from elsewhere on the machine spreads
over all of them; the table reports the median of the per-call times (the
median skips the rare episode-boundary steps; the update step is timed on
its own). The TensorFlow timeline (RunOptions FULL_TRACE, step_stats) of
a few traced calls attributes the time to kinds of ops and counts the
nodes each call executes (the count that the work on the step graph cuts;
`--json` keeps the figures), and the session thread settings (inter_op /
intra_op parallelism) are compared on (iv) and (v) with the environments in
this process. Run from the repository root:

    python benchmarks/profile_step.py
    python benchmarks/profile_step.py --modes=inprocess --rounds=5
    python benchmarks/profile_step.py --modes=inprocess,graph \
        --threads=default --rounds=3
"""

import collections
import collections.abc
import dataclasses
import os
import statistics
import sys
import time

from absl import app
from absl import flags
import numpy as np

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# TensorFlow and the framework load inside the functions: worker processes
# started through a fork server import this file as their main module, and
# must stay light.

_NUM_ENVS = 16
_MAX_LENGTH = 200
_TASK = 'Pendulum-v1'

FLAGS = flags.FLAGS
flags.DEFINE_list('modes', ['inprocess', 'processes'],
                  'Where the environments step: inprocess, processes, '
                  'graph (the in-graph task).')
flags.DEFINE_integer('rounds', 3, 'Episodes (of 200 steps) per measurement; '
                     'each training episode ends in one update.')
flags.DEFINE_list('threads', ['default', '1/1', '2/2'],
                  'Session settings inter_op/intra_op to compare.')
flags.DEFINE_integer('trace_steps', 20, 'Traced calls per measurement.')
flags.DEFINE_string('json', None, 'Also write the results to this JSON file '
                    '(e.g. benchmarks/results/profile_step.json).')

# Op types by the kind of work; anything else counts as "other".
_CATEGORIES = (
    ('numpy_function (env step, Python)',
     ('PyFunc', 'PyFuncStateless', 'EagerPyFunc')),
    ('variable handles, reads, assigns, scatters',
     ('VarHandleOp', 'ReadVariableOp', 'AssignVariableOp',
      'AssignAddVariableOp', 'AssignSubVariableOp', 'ResourceScatterUpdate',
      'ResourceGather', 'ResourceScatterAdd', 'ResourceScatterNdUpdate',
      'ResourceStridedSliceAssign', 'VariableShape', 'VarIsInitializedOp')),
    ('network math (MatMul, BiasAdd, activations)',
     ('MatMul', '_MklMatMul', '_FusedMatMul', '_MklFusedMatMul',
      '_MklNativeMatMul', '_MklNativeFusedMatMul', 'BatchMatMulV2',
      'BatchMatMulV3', '_MklBatchMatMulV2', 'BiasAdd', 'BiasAddGrad', 'Relu',
      'ReluGrad', 'Tanh', 'TanhGrad', 'Exp', 'Log', 'Softplus')),
    ('optimizer (Adam)',
     ('ResourceApplyAdam', 'ApplyAdam')),
    ('control flow (cond/while: Switch, Merge, Enter, Exit, If)',
     ('Switch', 'Merge', 'Enter', 'Exit', 'NextIteration', 'LoopCond',
      'RefSwitch', 'RefMerge', 'If', 'StatelessIf', 'While',
      'StatelessWhile', 'PartitionedCall', 'StatefulPartitionedCall',
      '_SwitchN', 'ControlTrigger')),
    ('identity, no-op, const, placeholders',
     ('Identity', 'IdentityN', 'NoOp', 'Const', '_Arg', '_Retval',
      'Placeholder', 'PlaceholderWithDefault', 'StopGradient')),
    ('check_numerics and asserts',
     ('CheckNumerics', 'CheckNumericsV2', 'Assert')),
    ('summaries', ('MergeSummary', 'ScalarSummary', 'HistogramSummary')),
)


def make_env(seed):
    """Pendulum as the training batch gets it, before the batch wrappers.

    Defined here, so that the fork server sends it by value and worker
    processes import gymnasium, not TensorFlow.
    """
    import gymnasium as gym
    env = gym.make(_TASK)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def make_wrapped_env(seed):
    """Pendulum with the per-environment wrappers that training used before.

    `env_construction.create_environment` without `batch_wrappers`: the wrappers
    run once per environment and step instead of once per batch.
    """
    from agents.tools import wrappers
    env = make_env(seed)
    env = wrappers.LimitDuration(env, _MAX_LENGTH)
    env = wrappers.RangeNormalize(env)
    env = wrappers.ClipAction(env)
    env = wrappers.ConvertTo32Bit(env)
    env.reset(seed=seed)
    return env


@dataclasses.dataclass
class Measurement:
    """A way to run one batch step, timed call by call.

    Attributes:
        name: Row label.
        prepare: Untimed function run before each episode.
        call: Function of one step; session calls also take the tracing
            arguments `call(options, metadata)`.
        traceable: Whether `call` accepts the tracing arguments.
        cleanup: Untimed function run after each episode, or None.
        trains: Whether the last step of an episode trains.
        times: Per-call seconds of the steps without update.
        update_times: Per-call seconds of the steps that trained.
    """

    name: str
    prepare: collections.abc.Callable
    call: collections.abc.Callable
    traceable: bool = True
    cleanup: collections.abc.Callable = None
    trains: bool = False
    times: list = dataclasses.field(default_factory=list)
    update_times: list = dataclasses.field(default_factory=list)

    def run_episode(self, steps):
        """Prepare, then time `steps` calls; the last one trains if any."""
        self.prepare()
        for index in range(steps):
            begin = time.perf_counter()
            self.call()
            duration = time.perf_counter() - begin
            if self.trains and index == steps - 1:
                self.update_times.append(duration)
            else:
                self.times.append(duration)
        if self.cleanup:
            self.cleanup()


def _session_config(threads):
    """Session config of the training script, or with fixed thread pools."""
    import tensorflow.compat.v1 as tf
    config = tf.ConfigProto(allow_soft_placement=True)
    if threads != 'default':
        inter, intra = (int(value) for value in threads.split('/'))
        config.inter_op_parallelism_threads = inter
        config.intra_op_parallelism_threads = intra
        # Without this, every session shares the process-wide inter-op pool
        # that the first session created.
        config.use_per_session_threads = True
    return config


def build(mode, threads):
    """Build the graph of one environment mode and its measurements.

    Args:
        mode: 'inprocess', 'processes' or 'graph'.
        threads: Session thread settings to measure (iv) and (v) under.

    Returns:
        Tuple of the measurements, the batch env (to close) and the graph.
    """
    import tensorflow.compat.v1 as tf
    from agents import tools
    from agents.training import config_spec
    from agents.environments import env_construction
    from agents.environments import env_modes
    from agents.environments import graph_env
    from agents.scripts import utility
    config = config_spec.load_named_config('pendulum')
    with config.unlocked:
        config.num_agents = _NUM_ENVS
        config.max_length = _MAX_LENGTH
        config.seed = 0
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        # As training builds it: the standard wrappers act on the batch.
        with tf.variable_scope('environments'):
            if mode == 'graph':
                batch_env = graph_env.define_in_graph_batch(config, 0, 'graph')
            else:
                batch_env = tools.InGraphBatchEnv(
                    env_construction.wrap_batch_env(
                        config, env_modes.create_batch_env(
                            make_env, _NUM_ENVS,
                            'processes' if mode == 'processes'
                            else 'inprocess', 0)))
        noop = tf.no_op()
        action = tf.zeros((_NUM_ENVS,) + tuple(batch_env.action.shape[1:]),
                          batch_env.action.dtype.base_dtype)
        env_step = batch_env.simulate(action)
        env_reset = batch_env.reset()
        reset = tf.placeholder_with_default(False, ())
        if mode != 'graph':
            mock = tools.MockAlgorithm(batch_env)
            # Pylint takes the export for the submodule of the same name.
            mock_fetch = tools.simulate(  # pylint: disable=not-callable
                batch_env, mock, log=False, reset=reset)
        trivial_reset = tf.Variable(False, trainable=False)
        trivial_fetch = tools.simulate(  # pylint: disable=not-callable
            batch_env, tools.MockAlgorithm(batch_env, record=False),
            log=False, reset=trivial_reset)
        trivial_switches = {
            (None, value): trivial_reset.assign(value)
            for value in (False, True)}
        sim = utility.define_simulation_graph(
            batch_env, config.algorithm, config)
        ppo_fetch = (sim.done, sim.score, sim.summary)
        # The training loop sets the switch variables in the graph; here
        # they are set between episodes, outside the timing.
        switches = {
            (training, force_reset): tf.group(
                sim.is_training.assign(training),
                sim.should_log.assign(False),
                sim.force_reset.assign(force_reset))
            for training in (False, True) for force_reset in (False, True)}
        # What feeding the switches, as the loop did before, costs.
        placeholders = [tf.placeholder(tf.bool, ()) for _ in range(3)]
        fed_noop = tf.group(noop, *[tf.identity(p) for p in placeholders])
        init = tf.global_variables_initializer()
    graph.finalize()

    def feed(values):
        return dict(zip(placeholders, values))

    def callable_calls(sess, fetch, switch_ops, training,
                       caller_thread=False):
        # Through a callable made once and without feeds, like tools.Loop;
        # with `caller_thread` as its phases with that option run.
        callable_ = sess.make_callable(fetch, accept_options=True)
        default = tf.RunOptions(
            inter_op_thread_pool=-1 if caller_thread else 0)

        def prepare():
            sess.run(switch_ops[(training, True)])
            callable_(options=default)
            sess.run(switch_ops[(training, False)])

        def call(options=None, metadata=None):
            if options is None:
                options = default
            elif caller_thread:
                options = tf.RunOptions(
                    trace_level=options.trace_level, inter_op_thread_pool=-1)
            return callable_(options=options, run_metadata=metadata)

        return prepare, call

    def session_call(sess, fetch, feed_dict=None):
        def call(options=None, metadata=None):
            return sess.run(fetch, feed_dict, options=options,
                            run_metadata=metadata)
        return call

    def clear_mock():
        # The double records every call; drop them to keep memory flat.
        mock.calls.clear()
        mock.transitions.clear()

    measurements = []
    if mode == 'graph':
        sess = tf.Session(graph=graph, config=_session_config(threads[0]))
        sess.run(init)
        begin = time.perf_counter()
        sess.run(env_reset)
        sess.run(env_step)
        first_call = time.perf_counter() - begin
        python_batch = per_env_batch = None
        measurements += [
            Measurement('(i) Session.make_callable(no_op)', lambda: None,
                        sess.make_callable(noop), traceable=False),
            Measurement('(ii) InGraphTaskBatch.simulate',
                        session_call(sess, env_reset),
                        session_call(sess, env_step))]
        threads = threads[:1]
    else:
        first_call = None
        # The Python batch under the in-graph one, and the same
        # environments with the wrappers applied per environment, as before.
        python_batch = batch_env._batch_env
        per_env_batch = tools.BatchEnv(
            [make_wrapped_env(seed) for seed in range(_NUM_ENVS)],
            blocking=True)
    for index, setting in enumerate(threads):
        sess = tf.Session(graph=graph, config=_session_config(setting))
        sess.run(init)
        suffix = '' if setting == 'default' else f' [threads {setting}]'
        if index == 0 and mode != 'graph':
            measurements += [
                Measurement('(i) session.run(no_op)', lambda: None,
                            session_call(sess, noop)),
                Measurement('(i) session.run(no_op) + 3 feeds', lambda: None,
                            session_call(sess, fed_noop, feed([False] * 3))),
                Measurement('(i) Session.make_callable(no_op)', lambda: None,
                            sess.make_callable(noop), traceable=False),
                Measurement('(ii) InGraphBatchEnv.simulate',
                            session_call(sess, env_reset),
                            session_call(sess, env_step)),
                Measurement('(iii) batch step in Python, batch wrappers',
                            python_batch.reset,
                            _python_step(python_batch, action.shape),
                            traceable=False),
                Measurement('(iii) batch step in Python, per-env wrappers',
                            per_env_batch.reset,
                            _python_step(per_env_batch, action.shape),
                            traceable=False),
                _raw_envs_measurement()]
        if mode != 'graph':
            measurements.append(Measurement(
                '(iv) simulate + MockAlgorithm' + suffix,
                session_call(sess, mock_fetch, {reset: True}),
                session_call(sess, mock_fetch), cleanup=clear_mock))
        measurements += [
            Measurement('(iv) simulate + trivial algorithm' + suffix,
                        *callable_calls(
                            sess, trivial_fetch, trivial_switches, None)),
            Measurement('(v) simulate + PPO eval' + suffix,
                        *callable_calls(sess, ppo_fetch, switches, False)),
            Measurement('(v) simulate + PPO eval, caller thread' + suffix,
                        *callable_calls(
                            sess, ppo_fetch, switches, False, True)),
            Measurement('(v) simulate + PPO train' + suffix,
                        *callable_calls(sess, ppo_fetch, switches, True),
                        trains=True)]
    return measurements, batch_env, graph, first_call


def _raw_envs_measurement():
    """Gymnasium's own environments without our wrappers or batch."""
    import gymnasium as gym
    envs = [gym.make(_TASK) for _ in range(_NUM_ENVS)]
    action = np.zeros(envs[0].action_space.shape, np.float32)

    def prepare():
        for seed, env in enumerate(envs):
            env.reset(seed=seed)

    def call():
        for env in envs:
            env.step(action)

    return Measurement(f'(iii) {_NUM_ENVS} x gymnasium step, no wrappers',
                       prepare, call, traceable=False)


def _python_step(batch_env, shape):
    """A step of the Python batch with zero actions."""
    actions = np.zeros(tuple(shape), np.float32)

    def call():
        batch_env.step(actions)

    return call


def _steps_per_episode(measurement):
    # A forced reset runs the first step of the episode in `prepare`; the
    # env-only measurements reset without stepping.
    if measurement.name.startswith(('(iv)', '(v)')):
        return _MAX_LENGTH - 1
    return _MAX_LENGTH


def measure(measurements, rounds):
    """Run every measurement for `rounds` episodes, taking turns."""
    for measurement in measurements:
        # Warm-up: the first calls allocate and compile kernels.
        measurement.run_episode(20)
        measurement.times.clear()
        measurement.update_times.clear()
    for round_ in range(rounds):
        shift = round_ % len(measurements)
        for measurement in measurements[shift:] + measurements[:shift]:
            measurement.run_episode(_steps_per_episode(measurement))


def trace(measurement, graph, calls, update=False):
    """Microseconds and executed nodes per call, by kind of op.

    Args:
        measurement: A traceable Measurement.
        graph: Its graph, to look up op types by node name.
        calls: Number of traced calls to average over.
        update: Trace the update step of a training episode instead.

    Returns:
        Tuple of dicts from category and from op type to (nodes,
        microseconds) per call, and the traced wall-clock microseconds per
        call.
    """
    import tensorflow.compat.v1 as tf
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    totals = collections.defaultdict(lambda: [0, 0])
    by_type = collections.defaultdict(lambda: [0, 0])
    wall = 0.0
    if update:
        calls = 1
        measurement.prepare()
        for _ in range(_steps_per_episode(measurement) - 1):
            measurement.call()
    else:
        measurement.prepare()
    for _ in range(calls):
        metadata = tf.RunMetadata()
        begin = time.perf_counter()
        measurement.call(options, metadata)
        wall += time.perf_counter() - begin
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                op_type = _op_type(graph, node)
                for table, key in ((totals, _categorize(op_type)),
                                   (by_type, op_type)):
                    table[key][0] += 1
                    table[key][1] += node.op_end_rel_micros
    if measurement.cleanup:
        measurement.cleanup()
    def per_call(table):
        return {name: (count / calls, micros / calls)
                for name, (count, micros) in table.items()}

    return per_call(totals), per_call(by_type), wall / calls * 1e6


def _op_type(graph, node):
    """Op type of a traced node; nodes of lowered conds keep their names."""
    label = node.timeline_label
    if ' = ' in label and '(' in label:
        return label.split(' = ', 1)[1].split('(', 1)[0]
    try:
        return graph.get_operation_by_name(node.node_name).type
    except KeyError:
        return node.node_name.split(':')[0]


def _categorize(op_type):
    for name, types in _CATEGORIES:
        if op_type in types:
            return name
    return 'other'


def _median_us(times):
    return statistics.median(times) * 1e6 if times else float('nan')


def print_components(mode, measurements):
    """Table of (i) to (vi) for one environment mode."""
    print(f'\n### {mode}: microseconds per batch step of {_NUM_ENVS} '
          'environments (median)\n')
    print('| component | µs per step | µs per env step | '
          'share of PPO train step |')
    print('| --- | ---: | ---: | ---: |')
    train = next(m for m in measurements
                 if m.name == '(v) simulate + PPO train')
    reference = _median_us(train.times)
    for measurement in measurements:
        if '[threads' in measurement.name:
            continue
        if measurement.trains and measurement is not train:
            update = (_median_us(measurement.update_times) -
                      _median_us(measurement.times))
            extra = f' (its update {update:,.0f})'
        else:
            extra = ''
        value = _median_us(measurement.times)
        print(f'| {measurement.name}{extra} | {value:,.0f} | '
              f'{value / _NUM_ENVS:,.1f} | {value / reference:.0%} |')
    update = _median_us(train.update_times) - reference
    steps = _NUM_ENVS * _MAX_LENGTH
    print(f'| (vi) PPO update (update step minus train step) | '
          f'{update:,.0f} | {update / steps:,.1f} per collected step | '
          f'{update / (reference * _MAX_LENGTH):.0%} of an episode\'s '
          'steps |')


def print_threads(measurements, threads):
    """Table of (iv) and (v) under each session thread setting."""
    names = ('(iv) simulate + MockAlgorithm',
             '(iv) simulate + trivial algorithm',
             '(v) simulate + PPO eval', '(v) simulate + PPO train')
    by_name = {m.name: m for m in measurements}
    print('\n### inprocess: session thread settings (inter_op/intra_op), '
          'µs per step (median)\n')
    print('| measurement | ' + ' | '.join(threads) + ' |')
    print('| --- |' + ' ---: |' * len(threads))
    rows = list(names) + ['(vi) PPO update']
    for name in rows:
        cells = []
        for setting in threads:
            suffix = '' if setting == 'default' else f' [threads {setting}]'
            if name == '(vi) PPO update':
                train = by_name['(v) simulate + PPO train' + suffix]
                value = (_median_us(train.update_times) -
                         _median_us(train.times))
            else:
                value = _median_us(by_name[name + suffix].times)
            cells.append(f'{value:,.0f}')
        print(f"| {name} | {' | '.join(cells)} |")


def print_trace(mode, rows):
    """Attribution tables from the timeline of traced calls."""
    for name, (totals, by_type, traced_wall, wall) in rows:
        micros = sum(value for _, value in totals.values())
        nodes = sum(count for count, _ in totals.values())
        print(f'\n### {mode}, {name}: timeline by kind of op, per call\n')
        print(f'Untraced median {wall:,.0f} µs; traced call '
              f'{traced_wall:,.0f} µs; kernel time of all {nodes:,.0f} '
              f'executed nodes {micros:,.0f} µs. Tracing slows every node, '
              'so shares are of the traced kernel time; ops may overlap on '
              'two threads, and the time between kernels (executor '
              'scheduling, session.run, feeds, fetches) is in no op.\n')
        print('| kind of op | nodes | kernel µs | share |')
        print('| --- | ---: | ---: | ---: |')
        ordered = sorted(totals.items(), key=lambda item: -item[1][1])
        for category, (count, value) in ordered:
            print(f'| {category} | {count:,.0f} | {value:,.0f} | '
                  f'{value / micros:.0%} |')
        top = sorted(by_type.items(), key=lambda item: -item[1][1])[:10]
        print('\nTop op types: ' + ', '.join(
            f'{op_type} {value:,.0f} µs ({count:,.0f})'
            for op_type, (count, value) in top) + '.')


def profile_mode(mode, threads, rounds, trace_steps):
    """Measure, trace and print one environment mode."""
    if mode == 'processes':
        # Thread settings are compared in process only; one session here.
        threads = threads[:1]
    load_before = os.getloadavg()
    begin = time.monotonic()
    measurements, batch_env, graph, first_call = build(mode, threads)
    build_seconds = time.monotonic() - begin
    print(f'{mode}: built in {build_seconds:.1f} s', file=sys.stderr,
          flush=True)
    try:
        begin = time.monotonic()
        measure(measurements, rounds)
        print(f'{mode}: measured in {time.monotonic() - begin:.1f} s',
              file=sys.stderr, flush=True)
        by_name = {m.name: m for m in measurements}
        traced = []
        simulate = next(
            m.name for m in measurements if m.name.startswith('(ii)'))
        for name in (simulate,
                     '(iv) simulate + trivial algorithm',
                     '(v) simulate + PPO eval', '(v) simulate + PPO train'):
            traced.append((name, trace(by_name[name], graph, trace_steps) +
                           (_median_us(by_name[name].times),)))
        train = by_name['(v) simulate + PPO train']
        traced.append(('(vi) PPO update step',
                       trace(train, graph, 1, update=True) +
                       (_median_us(train.update_times),)))
    finally:
        batch_env.close()
    print_components(mode, measurements)
    print('\nLoad average (1, 5, 15 min) before %s, after %s.' % (
        ', '.join(f'{value:.2f}' for value in load_before),
        ', '.join(f'{value:.2f}' for value in os.getloadavg())))
    if first_call is not None:
        print(f'\nGraph and sessions built in {build_seconds:.1f} s; the '
              f'first reset and step took {first_call:.2f} s.')
    if mode == 'inprocess' and len(threads) > 1:
        print_threads(measurements, threads)
    print_trace(mode, traced)
    graph_nodes = len(graph.as_graph_def().node)
    print_node_counts(mode, traced, graph_nodes)
    sys.stdout.flush()
    return dict(
        components={m.name: _median_us(m.times) for m in measurements},
        update_us=_median_us(train.update_times) - _median_us(train.times),
        executed_nodes={
            name: sum(count for count, _ in totals.values())
            for name, (totals, _, _, _) in traced},
        graph_nodes=graph_nodes, build_seconds=build_seconds,
        first_call_seconds=first_call,
        # The 1, 5 and 15 minute load averages before and after: other
        # work on the machine slows every figure.
        load_average=[load_before, os.getloadavg()])


def print_node_counts(mode, rows, graph_nodes):
    """Executed nodes per call, the count the step graph work cuts."""
    print(f'\n### {mode}: executed nodes per call (step stats of traced '
          f'calls; the graph has {graph_nodes:,} nodes)\n')
    print('| call | executed nodes |')
    print('| --- | ---: |')
    for name, (totals, _, _, _) in rows:
        nodes = sum(count for count, _ in totals.values())
        print(f'| {name} | {nodes:,.0f} |')


def main(argv):
    """Profile the modes that the flags name."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    for mode in FLAGS.modes:
        if mode not in ('inprocess', 'processes', 'graph'):
            raise app.UsageError(
                f"Unknown mode '{mode}'; expected inprocess, processes or "
                'graph.')
    if FLAGS.threads[0] != 'default':
        raise app.UsageError('The first --threads setting must be default.')
    # pylint: disable-next=import-outside-toplevel
    from agents.training import provenance
    record = provenance.record()
    results = {}
    for mode in FLAGS.modes:
        results[mode] = profile_mode(
            mode, FLAGS.threads, FLAGS.rounds, FLAGS.trace_steps)
    if FLAGS.json:
        provenance.write_json(FLAGS.json, dict(results=results), record)


if __name__ == '__main__':
    app.run(main)
