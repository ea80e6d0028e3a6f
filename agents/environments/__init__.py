"""Control tasks written as batched TensorFlow operations.

Each task follows the dynamics, rewards, terminations, spaces and reset
distribution of the gymnasium environment of the same id, as pure functions
of tensors that compile with XLA (`Task`); `InGraphTaskBatch` runs a batch of
one task behind the interface of `tools.InGraphBatchEnv`, so that
`tools.simulate` and the algorithms use it as they use a batch of Python
environments. `TASKS` maps gymnasium ids to the task classes.

The tasks compute in float32 where gymnasium computes in float64 (except
MountainCarContinuous-v0, float32 in both), so values agree to float32
precision, and a flag can differ where a state lies within float32 rounding
of a threshold. Initial states follow gymnasium's distributions but come
from TensorFlow's stateless Philox generator, not NumPy's, so a seed gives
other numbers than in gymnasium. Only the default arguments of `gym.make`
are covered (no `g` of Pendulum, no `sutton_barto_reward`, no reset
options).

The package also builds a run's environments (`env_modes`,
`env_construction`, `auto_batch_env`, `graph_env`). Environment worker
processes import those modules without TensorFlow, so the task classes,
which are TensorFlow code, load on first access of their names here.
"""

import importlib

_TASK_MODULES = {
    'Acrobot': 'acrobot',
    'CartPole': 'cartpole',
    'ContinuousMountainCar': 'continuous_mountain_car',
    'InGraphTaskBatch': 'in_graph_task',
    'MountainCar': 'mountain_car',
    'Pendulum': 'pendulum',
    'Task': 'task',
}

__all__ = sorted(_TASK_MODULES) + ['TASKS']


def __getattr__(name):
    """Load a task class, or the table `TASKS` of gymnasium ids, on use."""
    if name == 'TASKS':
        tasks = {
            task.env_id: task for task in (
                __getattr__('Pendulum'), __getattr__('CartPole'),
                __getattr__('Acrobot'), __getattr__('MountainCar'),
                __getattr__('ContinuousMountainCar'))}
        globals()['TASKS'] = tasks
        return tasks
    if name in _TASK_MODULES:
        module = importlib.import_module(f'{__name__}.{_TASK_MODULES[name]}')
        return getattr(module, name)
    raise AttributeError(
        f"module 'agents.environments' has no attribute '{name}'")
