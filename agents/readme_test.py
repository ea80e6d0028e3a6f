"""Runs the code snippets of README.md, so the documentation stays true."""

import ast
import importlib.metadata
import importlib.util
import os
import re
import shlex

import numpy as np
import psutil

_ROOT = os.path.join(os.path.dirname(__file__), '..')
_README = os.path.join(_ROOT, 'README.md')
# Commands of the README that the system or the virtual environment brings.
_SYSTEM_COMMANDS = ('bash', 'pip', 'python', 'python3', 'source', 'sudo')


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


def _readme_commands():
    """Every command of the README's shell blocks, as lists of words."""
    with open(_README, encoding='utf-8') as file_:
        text = file_.read()
    commands = []
    for block in re.findall(r'```sh\n(.*?)```', text, re.DOTALL):
        block = re.sub(r'\\\n', ' ', block)
        for line in block.splitlines():
            line = line.split('#', 1)[0]
            for command in re.split(r'&&|;', line):
                # Drop the optional arguments the README shows in brackets.
                command = re.sub(r'\[[^]]*\]', '', command).strip()
                if command:
                    commands.append(shlex.split(command))
    return commands


def _requirements():
    """Names of the distributions setup.py requires, by extra ('' for none).

    Returns:
      Dict from '' (what `pip install -e .` installs) and the names of the
      extras to sets of distribution names.
    """
    with open(os.path.join(_ROOT, 'setup.py'), encoding='utf-8') as file_:
        tree = ast.parse(file_.read())
    requirements = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.keyword):
            continue
        if node.arg == 'install_requires':
            requirements[''] = _names(node.value.elts)
        elif node.arg == 'extras_require':
            for key, value in zip(node.value.keys, node.value.values):
                requirements[key.value] = _names(value.elts)
    return requirements


def _names(elements):
    return {re.split(r'[\[<>=!~ ]', element.value)[0].lower()
            for element in elements}


def _console_scripts():
    """Dict from console script names to their distributions' names."""
    scripts = {}
    for dist in importlib.metadata.distributions():
        for entry_point in dist.entry_points:
            if entry_point.group == 'console_scripts':
                scripts[entry_point.name] = dist.metadata['Name'].lower()
    return scripts


def test_every_readme_command_exists_after_install():
    """`python -m` modules, scripts, and the console scripts of required
    distributions, such as `tensorboard`, or of an extra's, such as `ray`."""
    commands = _readme_commands()
    assert ['tensorboard', '--logdir=~/logdir'] in commands
    requirements = _requirements()
    # `pip install -e .` alone brings TensorBoard (TensorFlow >= 2.19 not).
    assert 'tensorboard' in requirements['']
    requires = set().union(*requirements.values())
    scripts = _console_scripts()
    for words in commands:
        # Leading environment variables, as in RAY_ADDRESS=... python ...
        while re.match(r'^[A-Z_]+=', words[0]):
            words = words[1:]
        if words[0] in ('python', 'python3') and words[1] == '-m':
            if words[2] in ('venv', 'pip', 'pytest', 'pylint'):
                continue
            assert importlib.util.find_spec(words[2]), words
        elif words[0] in ('python', 'python3'):
            assert os.path.isfile(os.path.join(_ROOT, words[1])), words
        elif words[0] not in _SYSTEM_COMMANDS:
            assert words[0] in scripts, f'{words[0]} is not installed.'
            assert scripts[words[0]] in requires, (
                f'{words[0]} comes from {scripts[words[0]]}, which setup.py '
                'does not require.')


def test_2017_snippet_runs_as_the_notes_say():
    namespace = {'__name__': 'readme_snippet'}
    exec(compile(_snippet('2017'), 'README.md', 'exec'), namespace)  # pylint: disable=exec-used
    assert namespace['config'].steps == 1e5
    assert namespace['config'].locked
    assert namespace['message'].startswith(
        "AttrDict has no key 'learning_rat'; available keys: ")
    assert namespace['done'] is False


def test_reliability_section_names_tests_that_exist():
    """Every test that the Reliability section names is defined."""
    with open(_README, encoding='utf-8') as file_:
        text = file_.read()
    section = text[text.index('## Reliability'):text.index('## Performance')]
    sources = ''
    root = os.path.dirname(__file__)
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith('_test.py'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as file_:
                    sources += file_.read()
    modules = set(re.findall(r'`(\w+_test)[`.]', section))
    tests = set(re.findall(r'\b(test_\w+)', section))
    assert modules and tests
    for module in modules:
        assert any(
            name == module + '.py' for _, _, names in os.walk(root)
            for name in names), module
    for test in tests:
        assert f'def {test}(' in sources, test
