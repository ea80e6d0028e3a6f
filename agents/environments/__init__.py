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
"""

from agents.environments.acrobot import Acrobot
from agents.environments.cartpole import CartPole
from agents.environments.continuous_mountain_car import ContinuousMountainCar
from agents.environments.in_graph_task import InGraphTaskBatch
from agents.environments.mountain_car import MountainCar
from agents.environments.pendulum import Pendulum
from agents.environments.task import Task

TASKS = {
    task.env_id: task for task in (
        Pendulum, CartPole, Acrobot, MountainCar, ContinuousMountainCar)}

__all__ = [
    'Acrobot', 'CartPole', 'ContinuousMountainCar', 'InGraphTaskBatch',
    'MountainCar', 'Pendulum', 'TASKS', 'Task']
