"""Control tasks as batched TensorFlow operations (`TASKS` maps gymnasium
ids to them), and a run's environments. The task classes load on first
access, so that worker processes import this package without TensorFlow."""

import importlib

_TASK_MODULES = {
    'Acrobot': 'acrobot',
    'CartPole': 'cartpole',
    'ContinuousMountainCar': 'mountain_car',
    'InGraphTaskBatch': 'in_graph_task',
    'MountainCar': 'mountain_car',
    'Pendulum': 'pendulum',
    'Task': 'in_graph_task',
}

__all__ = sorted(_TASK_MODULES) + ['TASKS']


def __getattr__(name):
    """Load a task class, or the table `TASKS` of gymnasium ids, on use."""
    if name == 'TASKS':
        tasks = {
            task.env_id: task for task in map(__getattr__, (
                'Pendulum', 'CartPole', 'Acrobot', 'MountainCar',
                'ContinuousMountainCar'))}
        globals()['TASKS'] = tasks
        return tasks
    if name in _TASK_MODULES:
        module = importlib.import_module(f'{__name__}.{_TASK_MODULES[name]}')
        return getattr(module, name)
    raise AttributeError(
        f"module 'agents.environments' has no attribute '{name}'")
