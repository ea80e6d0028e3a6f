"""Control tasks as batched TensorFlow operations (`TASKS` maps gymnasium
ids to them), and a run's environments. The task classes load on first
access, so that worker processes import this package without TensorFlow."""

import importlib

# The tasks in the order of `TASKS`, then the classes they build on.
_TASK_MODULES = {
    'Pendulum': 'pendulum',
    'CartPole': 'cartpole',
    'Acrobot': 'acrobot',
    'MountainCar': 'mountain_car',
    'ContinuousMountainCar': 'mountain_car',
    'InGraphTaskBatch': 'in_graph_task',
    'Task': 'in_graph_task',
}

__all__ = sorted(_TASK_MODULES) + ['TASKS']


def __getattr__(name):
    """Load a task class, or the table `TASKS` of gymnasium ids, on use."""
    if name == 'TASKS':
        tasks = {
            task.env_id: task for task in map(__getattr__, _TASK_MODULES)
            if getattr(task, 'env_id', None)}
        globals()['TASKS'] = tasks
        return tasks
    if name in _TASK_MODULES:
        module = importlib.import_module(f'{__name__}.{_TASK_MODULES[name]}')
        return getattr(module, name)
    raise AttributeError(
        f"module 'agents.environments' has no attribute '{name}'")
