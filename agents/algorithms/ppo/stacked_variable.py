"""Variables of a population: stacked on a leading member axis `[P, ...]`
and seen as one member's by the code that created them; and the config
values that members set apart (`StackedConstant`), seen alike."""

import contextlib
import threading

import numpy as np
import tensorflow.compat.v1 as tf

# `member_view` of the whole stack, outside any member's code.
WHOLE = 'whole'

_view = threading.local()


@contextlib.contextmanager
def member_view(member, values=None):
    """Let `StackedVariable`s read as the `member` (int, int32 tensor or
    `WHOLE`) while code is traced; member 0 outside. With `values` (a dict
    from `variable.ref()` of stacked variables to tensors), the variables
    read those tensors instead, and reading any other raises a ValueError:
    a block of members carries its weights as tensors, not variables
    (`StackedConstant`s, keyed by themselves, read their own values where
    `values` lacks them)."""
    saved = getattr(_view, 'member', 0), getattr(_view, 'values', None)
    _view.member, _view.values = member, values
    try:
        yield
    finally:
        _view.member, _view.values = saved


class StackedVariable:
    """A variable `[P, *shape]` seen as one member's `shape` by the code
    that created it: reads give the slice of the `member_view`, assignments
    (under `WHOLE` only) write the stack."""

    def __init__(self, stacked):
        self.stacked = stacked

    @property
    def dtype(self):
        """The dtype of the variable."""
        return self.stacked.dtype

    @property
    def shape(self):
        """A member's shape."""
        return self.stacked.shape[1:]

    @property
    def name(self):
        """The name of the stacked variable."""
        return self.stacked.name

    def get_shape(self):
        """A member's shape."""
        return self.shape

    def value(self):
        """The value of the member being traced (all under `WHOLE`)."""
        values = getattr(_view, 'values', None)
        if values is None:
            value = self._whole()
        elif self._key() in values:
            value = values[self._key()]
        else:
            value = self._missing()
        member = getattr(_view, 'member', 0)
        if isinstance(member, str):
            return value
        if isinstance(member, int):
            return value[member]
        return tf.gather(value, member)

    read_value = value

    def _whole(self):
        """The value of every member."""
        return self.stacked.value()

    def _key(self):
        """The key of the value in a `member_view`'s `values`."""
        return self.stacked.ref()

    def _missing(self):
        """The value where a `member_view`'s `values` lacks it."""
        raise ValueError(
            f'{self.name} is not among the values of the member view.')

    def assign(self, value, **kwargs):
        """Assign the whole stack."""
        self._check_whole()
        return self.stacked.assign(value, **kwargs)

    def assign_add(self, value, **kwargs):
        """Add to the whole stack."""
        self._check_whole()
        return self.stacked.assign_add(value, **kwargs)

    def __getitem__(self, key):
        return self.value()[key]

    @staticmethod
    def _check_whole():
        """Raise unless writes go to the whole stack."""
        if getattr(_view, 'member', 0) != WHOLE:
            raise ValueError('A population writes its variables whole.')


class StackedConstant(StackedVariable):
    """A config value of every member, float32 `[P]`, seen as the member's
    scalar as a `StackedVariable` is: a variant's learning rate, discount,
    ...; its truth is that of every member's (they must agree)."""

    def __init__(self, values):
        super().__init__(None)
        self.values = np.asarray(values, np.float32)

    dtype = tf.float32
    shape = tf.TensorShape([])
    name = 'variant'

    def _whole(self):
        return tf.constant(self.values)

    def _key(self):
        return self

    def _missing(self):
        return self._whole()

    def __bool__(self):
        return bool(self.values.all())

    def __repr__(self):
        return f'StackedConstant({self.values.tolist()!r})'

    def assign(self, value, **kwargs):
        raise TypeError('A config value of the members is constant.')

    assign_add = assign


def _operator(name):
    """The tensor operator `name` on a `StackedVariable`'s value."""
    return lambda variable, *args: getattr(tf.Tensor, name)(
        variable.value(), *args)


for _name in ('__add__', '__radd__', '__sub__', '__rsub__', '__mul__',
              '__rmul__', '__truediv__', '__rtruediv__', '__neg__',
              '__gt__', '__ge__', '__lt__', '__le__'):
    setattr(StackedVariable, _name, _operator(_name))
tf.register_tensor_conversion_function(
    StackedVariable, lambda variable, dtype=None, name=None, as_ref=False:
    variable.value())


def stacking_creator(size):
    """A variable creator of `StackedVariable`s of `size` members."""

    def _creator(next_creator, **kwargs):
        initial = kwargs['initial_value']
        dtype = kwargs.get('dtype')

        def _stacked_initial():
            value = tf.convert_to_tensor(
                initial() if callable(initial) else initial, dtype)
            return tf.tile(value[None], [size] + [1] * value.shape.ndims)

        kwargs['initial_value'] = _stacked_initial
        if kwargs.get('shape') is not None:
            kwargs['shape'] = [size] + tf.TensorShape(
                kwargs['shape']).as_list()
        return StackedVariable(next_creator(**kwargs))

    return _creator


def member_of(structure, member):
    """A member's slice of every tensor of a stacked structure."""
    return tf.nest.map_structure(
        lambda tensor: tf.gather(tensor, member), structure)
