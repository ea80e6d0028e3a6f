"""Off-screen OpenGL for MuJoCo rendering: which backend works here. No
TensorFlow here: Mesa's OpenGL crashes in a process that loaded it (their
bundled LLVM builds collide)."""

import os
import subprocess
import sys

import gymnasium as gym

# MuJoCo's off-screen backends in the order tried, and their Debian packages.
GL_BACKENDS = ('egl', 'osmesa')
_GL_PACKAGES = 'libegl1 libgl1-mesa-dri (EGL) or libosmesa6 (OSMesa)'
# Run in a fresh interpreter: a process cannot change its backend once
# mujoco was imported.
_GL_PROBE = ('import mujoco; context = mujoco.GLContext(16, 16); '
             'context.make_current(); context.free()')
_GL_PROBE_SECONDS = 60


class GLBackendError(RuntimeError):
    """No off-screen OpenGL backend for MuJoCo rendering is available."""


def select_gl_backend(required=True):
    """Choose MuJoCo's off-screen OpenGL backend for this process: that of
    `MUJOCO_GL`, or else the first of EGL and OSMesa that works, stored in
    `MUJOCO_GL`; None where none works and not `required`, else a
    `GLBackendError` naming the packages to install."""
    requested = os.environ.get('MUJOCO_GL')
    candidates = (requested,) if requested else GL_BACKENDS
    failures = []
    for backend in candidates:
        failure = _probe_gl_backend(backend)
        if failure is None:
            os.environ['MUJOCO_GL'] = backend
            return backend
        failures.append(f'{backend}: {failure}')
    if not required:
        return None
    if requested:
        raise GLBackendError(
            f'MuJoCo cannot render with MUJOCO_GL={requested} '
            f'({failures[0]}); unset MUJOCO_GL to try '
            f"{' and '.join(GL_BACKENDS)}, or install the Debian packages "
            f'{_GL_PACKAGES}.')
    raise GLBackendError(
        'No off-screen OpenGL backend for MuJoCo rendering ('
        + '; '.join(failures) + '). Install the Debian packages '
        f'{_GL_PACKAGES}, e.g. sudo apt-get install libegl1 libgl1-mesa-dri.')


def _probe_gl_backend(backend):
    """Error line of creating a MuJoCo GL context with a backend, or None."""
    environ = dict(os.environ, MUJOCO_GL=backend)
    try:
        result = subprocess.run(
            [sys.executable, '-c', _GL_PROBE], env=environ, capture_output=True,
            text=True, timeout=_GL_PROBE_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return f'no context within {_GL_PROBE_SECONDS} seconds'
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return lines[-1] if lines else f'exit status {result.returncode}'


def needs_gl(env):
    """Whether a gymnasium id or constructor renders through MuJoCo; None
    when a constructor does not reveal it."""
    if isinstance(env, str):
        entry_point = gym.spec(env).entry_point
        if callable(entry_point):
            entry_point = getattr(entry_point, '__module__', '')
        return 'mujoco' in str(entry_point)
    module = getattr(env, '__module__', '') or ''
    return True if 'mujoco' in module else None
