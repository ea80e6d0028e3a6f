r"""Sweep benchmark: runs on Ray against the same runs one after another.

Trains the same seeds of a config twice: one after another, each as its own
`python -m agents.scripts.train` process, and as one
`python -m agents.scripts.sweep` on a local Ray of this machine's cores, one
CPU per run (or per population: the sweep packs the seeds into one unless
--nopack). Prints the wall-clock time of both and their ratio, and writes
the raw figures as JSON.

  python benchmarks/sweep.py --config=pendulum --seeds=0,1,2,3 \
      --json=benchmarks/results/sweep-pendulum.json

Both sides start their processes the same way (a fresh Python importing
TensorFlow per run; the sweep adds starting Ray), train with
--env_mode=inprocess and write their run folders under --logdir.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from agents.training import provenance  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('config', 'pendulum', 'Config of every run.')
flags.DEFINE_list('seeds', ['0', '1', '2', '3'], 'Seeds, one run each.')
flags.DEFINE_multi_string(
    'set', [], 'KEY=VALUE config override for every run, as for the sweep.')
flags.DEFINE_string(
    'logdir', None, 'Folder of the run folders; a temporary one if unset.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_boolean(
    'pack', True, 'Let the sweep train the seeds as one population; '
    '--nopack: a process per run, as the sweep did before it packed runs.')


def _run(command):
    """Run a command; return its wall-clock seconds and its output."""
    start = time.monotonic()
    process = subprocess.run(
        command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    if process.returncode:
        sys.exit(f'Failed ({process.returncode}): {" ".join(command)}\n'
                 f'{process.stderr[-2000:]}')
    return seconds, process.stdout


def main(argv):
    """Time the runs one after another, then as a sweep."""
    del argv
    logdir = FLAGS.logdir or tempfile.mkdtemp(prefix='sweep-benchmark-')
    settings = [f'--set={item}' for item in FLAGS.set]
    record = provenance.record()
    # The machine's load average (1 minute) between the sides, beside the
    # provenance's at the start and the end: on a shared machine, the
    # other work changes the comparison.
    load = {}
    one_by_one = []
    for seed in FLAGS.seeds:
        seconds, _ = _run([
            sys.executable, '-m', 'agents.scripts.train',
            f'--logdir={os.path.join(logdir, "one-by-one")}',
            f'--config={FLAGS.config}', f'--seed={seed}',
            '--env_mode=inprocess', *settings])
        one_by_one.append(dict(seed=int(seed), wall_clock=round(seconds, 1)))
        print(f'one after another: seed {seed} took {seconds:.0f} s',
              flush=True)
    sequential = sum(run['wall_clock'] for run in one_by_one)
    load['after_one_by_one'] = os.getloadavg()[0]
    seconds, output = _run([
        sys.executable, '-m', 'agents.scripts.sweep',
        f'--logdir={logdir}', '--timestamp=sweep',
        f'--configs={FLAGS.config}', f'--seeds={",".join(FLAGS.seeds)}',
        '--env_mode=inprocess', '--cpus_per_run=1',
        '--pack' if FLAGS.pack else '--nopack', *settings])
    load['after_sweep'] = os.getloadavg()[0]
    print(output, flush=True)
    with open(os.path.join(logdir, 'sweep', 'results.json'),
              encoding='utf-8') as file_:
        sweep_results = json.load(file_)
    results = dict(
        load_average=load, config=FLAGS.config,
        seeds=[int(seed) for seed in FLAGS.seeds], settings=FLAGS.set,
        pack=FLAGS.pack,
        one_by_one=one_by_one, one_by_one_wall_clock=round(sequential, 1),
        sweep_wall_clock=round(seconds, 1),
        speedup=round(sequential / seconds, 2), sweep=sweep_results)
    print(f'| runs | one after another s | sweep s | speed-up |\n'
          f'| ---: | ---: | ---: | ---: |\n'
          f'| {len(FLAGS.seeds)} | {sequential:.0f} | {seconds:.0f} | '
          f'{sequential / seconds:.2f}x |')
    if FLAGS.json:
        os.makedirs(os.path.dirname(FLAGS.json) or '.', exist_ok=True)
        provenance.write_json(FLAGS.json, results, record)


if __name__ == '__main__':
    app.run(main)
