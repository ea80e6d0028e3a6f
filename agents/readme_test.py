"""Runs the code snippets of README.md, so the documentation stays true."""

import os
import re

import numpy as np
import psutil

_README = os.path.join(os.path.dirname(__file__), '..', 'README.md')


def _snippet(name):
    with open(_README, encoding='utf-8') as file_:
        text = file_.read()
    match = re.search(
        rf'<!-- snippet: {name} -->\n```python\n(.*?)```', text, re.DOTALL)
    assert match, f'README.md has no python snippet named {name!r}.'
    return match.group(1)


def _worker_processes():
    """Descendants except multiprocessing's own server and tracker."""
    workers = []
    for child in psutil.Process().children(recursive=True):
        helper = 'multiprocessing' in ' '.join(child.cmdline())
        if helper and child.ppid() == os.getpid():
            continue
        workers.append(child)
    return workers


def test_tools_snippet_runs_full_episodes_in_worker_processes():
    namespace = {'__name__': 'readme_snippet'}
    code = compile(_snippet('tools'), 'README.md', 'exec')
    exec(code, namespace)  # pylint: disable=exec-used
    done, scores = namespace['main']()
    np.testing.assert_array_equal(done, [True] * 4)
    assert scores.shape == (4,)
    # Pendulum rewards lie in [-16.3, 0] per step.
    assert np.all(scores < 0) and np.all(scores > -16.3 * 200)
    assert not _worker_processes()
