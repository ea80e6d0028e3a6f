"""Tests of the choice of MuJoCo's off-screen OpenGL backend."""

import os

import pytest

from agents import tools
from agents.tools import gl_backend


@pytest.fixture(name='unset_mujoco_gl')
def fixture_unset_mujoco_gl(restore_mujoco_gl):
    """Unset MUJOCO_GL for a test and restore it after."""
    restore_mujoco_gl.delenv('MUJOCO_GL', raising=False)
    return restore_mujoco_gl


def test_needs_gl():
    """MuJoCo ids need GL, classic control ids not, constructors unknown."""
    assert gl_backend.needs_gl('HalfCheetah-v5') is True
    assert gl_backend.needs_gl('Pendulum-v1') is False
    assert gl_backend.needs_gl(tools.MockEnvironment) is None


def test_gl_backend_error_names_packages(unset_mujoco_gl):
    """Without a backend, one line names the Debian packages to install."""
    monkeypatch = unset_mujoco_gl
    monkeypatch.setattr(
        gl_backend, '_probe_gl_backend', lambda backend: 'cannot load')
    with pytest.raises(gl_backend.GLBackendError) as error:
        gl_backend.select_gl_backend()
    message = str(error.value)
    assert '\n' not in message
    assert 'egl: cannot load; osmesa: cannot load' in message
    assert 'libegl1 libgl1-mesa-dri (EGL)' in message
    assert 'libosmesa6 (OSMesa)' in message
    assert 'MUJOCO_GL' not in os.environ
    assert gl_backend.select_gl_backend(required=False) is None


def test_gl_backend_falls_back_to_osmesa(unset_mujoco_gl):
    """OSMesa is chosen when EGL fails, and stored in MUJOCO_GL."""
    monkeypatch = unset_mujoco_gl
    tried = []

    def probe(backend):
        tried.append(backend)
        return 'no EGL' if backend == 'egl' else None

    monkeypatch.setattr(gl_backend, '_probe_gl_backend', probe)
    assert gl_backend.select_gl_backend() == 'osmesa'
    assert tried == ['egl', 'osmesa']
    assert os.environ['MUJOCO_GL'] == 'osmesa'


def test_gl_backend_rejects_unusable_requested_backend(monkeypatch):
    """A MUJOCO_GL value that cannot render is reported, not replaced."""
    monkeypatch.setenv('MUJOCO_GL', 'nonsense')
    with pytest.raises(gl_backend.GLBackendError, match=(
            'MuJoCo cannot render with MUJOCO_GL=nonsense .*invalid value')):
        gl_backend.select_gl_backend()
