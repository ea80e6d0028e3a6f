"""Control tasks as batched TensorFlow operations, and a run's environments.

Each task (`Task`) follows the gymnasium environment of the same id in
float32 (`TASKS` maps the ids to them); `InGraphTaskBatch` runs a batch of
one behind the interface of `tools.InGraphBatchEnv`. See docs/env-modes.md
for how they differ from gymnasium's. The package also builds a run's
environments (`env_modes`, `env_construction`, `auto_batch_env`,
`graph_env`), which worker processes import without TensorFlow, so the task
classes load on first access of their names here.
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
