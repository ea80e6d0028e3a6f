"""Installs batch-ppo: efficient batched RL in TensorFlow."""

import setuptools

setuptools.setup(
    name='batch-ppo',
    version='2.0.0',
    description=(
        'Efficient batched reinforcement learning in TensorFlow: parallel '
        'environment processes driven from one graph op, and BatchPPO.'),
    license='Apache-2.0',
    packages=setuptools.find_packages(exclude=['benchmarks', 'benchmarks.*']),
    python_requires='>=3.10',
    install_requires=[
        'tensorflow>=2.16',
        # TensorFlow >= 2.19 no longer installs it; the README's next
        # command after training is `tensorboard --logdir`.
        'tensorboard',
        'gymnasium[classic-control,mujoco]>=1.0',
        'mujoco>=3.0',
        'ruamel.yaml>=0.17',
        'numpy',
        'cloudpickle',
        'imageio',
        'imageio-ffmpeg',
    ],
    extras_require={
        # SciPy checks agents/tools/seed_statistics.py against
        # scipy.stats.bootstrap and trim_mean; the package does not need it.
        'test': ['pytest', 'pytest-xdist', 'pylint', 'psutil', 'scipy'],
        # Sweeps on Ray (agents/scripts/sweep.py) and --env_mode=ray.
        'ray': ['ray>=2.9'],
        # EnvPool's C++ thread pool as --env_mode=envpool. EnvPool ships
        # wheels for Linux and Python >= 3.11 only; elsewhere the extra
        # installs nothing and the mode says so.
        'envpool': [
            'envpool>=1.2.5; python_version >= "3.11" and '
            'platform_system == "Linux"',
        ],
        # --format=onnx of agents/scripts/export.py: the converter and the
        # runtime that checks the converted model.
        'export': ['tf2onnx>=1.17', 'onnxruntime>=1.17'],
        # Peer comparison in benchmarks/peers.py. Exact pins keep the peer's
        # numbers comparable between runs; our machines provide a CPU-only
        # wheel of torch 2.13.0, other versions would pull in CUDA.
        'bench': [
            'torch==2.13.0',
            'stable-baselines3==2.9.2',
            'psutil',
            # Learning curves of benchmarks/learning.py --plot.
            'matplotlib',
        ],
        # The compiled peer of benchmarks/peers.py (rejax_same,
        # rejax_default): rejax's PPO on gymnax in JAX. rejax 0.1.3 needs a
        # gymnax before 1.0 (whose `step` returns five values); exact pins
        # for comparable numbers. Install it in a virtual environment of
        # its own (see benchmarks/peers_rejax.py) so that TensorFlow and
        # JAX never share one.
        'bench-jax': [
            'rejax==0.1.3',
            'gymnax==0.0.9',
            'jax==0.10.2',
            'absl-py',
        ],
    },
    classifiers=[
        'Programming Language :: Python :: 3',
        'Topic :: Scientific/Engineering :: Artificial Intelligence',
    ],
)
