"""Runs the snippets of README.md and docs/, so the documentation stays true.

The python snippets marked `<!-- snippet: NAME -->` run, the commands of the
`sh` blocks must exist after install, and the links between the pages must
lead somewhere.
"""

import ast
import glob
import importlib.metadata
import importlib.util
import os
import re
import shlex

import numpy as np
import psutil

_ROOT = os.path.join(os.path.dirname(__file__), '..')
_README = os.path.join(_ROOT, 'README.md')
_DOCS = os.path.join(_ROOT, 'docs')
# The README is a front door; measurements and long explanations live in docs/.
_README_MAX_LINES = 300
# Names of the python snippets, each run by a test of this file.
_SNIPPETS = ('tools', '2017', 'export', 'train-2017')
# Commands of the documents that the system or the virtual environment brings.
_SYSTEM_COMMANDS = ('bash', 'pip', 'python', 'python3', 'source', 'sudo')


def _documents():
    """Paths of the README and of every page in docs/."""
    return [_README] + sorted(glob.glob(os.path.join(_DOCS, '*.md')))


def _read(path):
    with open(path, encoding='utf-8') as file_:
        return file_.read()


def _snippet(name):
    """The python snippet `name` of the documents, compiled.

    Returns:
      Code object whose file name is the document's path relative to the root.
    """
    found = []
    for path in _documents():
        found += [
            (path, match) for match in re.findall(
                rf'<!-- snippet: {name} -->\n```python\n(.*?)```',
                _read(path), re.DOTALL)]
    assert len(found) == 1, (
        f'{len(found)} python snippets named {name!r}; expected one.')
    path, source = found[0]
    return compile(source, os.path.relpath(path, _ROOT), 'exec')


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
    exec(_snippet('tools'), namespace)  # pylint: disable=exec-used
    done, scores = namespace['main']()
    np.testing.assert_array_equal(done, [True] * 4)
    assert scores.shape == (4,)
    # Pendulum rewards lie in [-16.3, 0] per step.
    assert np.all(scores < 0) and np.all(scores > -16.3 * 200)
    assert not _worker_processes()


def _commands(path):
    """Every command of a document's shell blocks, as lists of words."""
    commands = []
    for block in re.findall(r'```sh\n(.*?)```', _read(path), re.DOTALL):
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


def test_every_documented_command_exists_after_install():
    """`python -m` modules, scripts, and the console scripts of required
    distributions, such as `tensorboard`, or of an extra's, such as `ray`,
    in the README and in every page of docs/."""
    assert ['tensorboard', '--logdir=~/logdir'] in _commands(_README)
    commands = [
        words for path in _documents() for words in _commands(path)]
    # Every page's commands are checked, the benchmarks' among them.
    assert ['python', 'benchmarks/peers.py'] in commands
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
    exec(_snippet('2017'), namespace)  # pylint: disable=exec-used
    assert namespace['config'].steps == 1e5
    assert namespace['config'].locked
    assert namespace['message'].startswith(
        "AttrDict has no key 'learning_rat'; available keys: ")
    assert namespace['done'] is False


def test_reliability_page_names_tests_that_exist():
    """Every test that docs/reliability.md names is defined."""
    section = _read(os.path.join(_DOCS, 'reliability.md'))
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


def test_readme_is_a_front_door_of_at_most_300_lines():
    lines = _read(_README).count('\n')
    assert lines <= _README_MAX_LINES, (
        f'README.md has {lines} lines; expected at most {_README_MAX_LINES}: '
        'move measurements and long explanations to docs/.')


def _anchors(text):
    """GitHub's anchors of the headings of a markdown text."""
    text = re.sub(r'```.*?```', '', text, flags=re.DOTALL)
    anchors = set()
    for heading in re.findall(r'^#+ (.*)$', text, re.MULTILINE):
        anchor = re.sub(r'[^\w\- ]', '', heading.lower()).replace(' ', '-')
        anchors.add(anchor)
    return anchors


def _links(text):
    """Targets of the relative links and images of a markdown text."""
    text = re.sub(r'```.*?```', '', text, flags=re.DOTALL)
    return [
        target for target in re.findall(r'\]\(([^)\s]+)\)', text)
        if not re.match(r'^[a-z]+:', target)]


def test_readme_links_every_docs_page_and_every_link_resolves():
    """Pages and anchors that the README and docs/ link to exist, and no
    page of docs/ is left unlinked from the README."""
    linked = {
        target.split('#')[0] for target in _links(_read(_README))
        if re.match(r'docs/[^#]*\.md', target)}
    pages = {os.path.relpath(path, _ROOT) for path in _documents()[1:]}
    assert linked == pages, (
        f'README.md links to {sorted(linked - pages)} (missing) and not to '
        f'{sorted(pages - linked)}.')
    for path in _documents():
        for target in _links(_read(path)):
            page, _, anchor = target.partition('#')
            page = os.path.normpath(
                os.path.join(os.path.dirname(path), page)) if page else path
            where = f'{os.path.relpath(path, _ROOT)} links to {target}'
            assert os.path.exists(page), f'{where}, which does not exist.'
            if anchor:
                assert anchor in _anchors(_read(page)), (
                    f'{where}, a heading that does not exist.')


def test_every_marked_snippet_is_run_by_a_test():
    names = [
        name for path in _documents()
        for name in re.findall(r'<!-- snippet: (\S+) -->', _read(path))]
    assert sorted(names) == sorted(_SNIPPETS)


def test_speed_figures_name_the_cpus_they_were_measured_on():
    """A speed holds for its CPU: every page with speeds names the CPUs,
    and the README's ratio to SB3 gives the range over them."""
    for path in _documents():
        text = _read(path)
        if re.search(r'steps/s|µs|\bms\b|\dx SB3', text):
            assert 'Intel Xeon' in text or 'AMD EPYC' in text, (
                f'{os.path.relpath(path, _ROOT)} gives speeds without '
                'naming the CPU they were measured on.')
    readme = ' '.join(_read(_README).split())
    assert re.findall(r'[\d.-]+x SB3', readme) == ['3.1-5.9x SB3']
    assert (
        "on Pendulum 3.1-5.9x SB3's steps/s by the CPU, 5.9x on a 2-vCPU "
        'Intel Xeon, 3.1-3.4x on a 2-vCPU AMD EPYC') in readme
