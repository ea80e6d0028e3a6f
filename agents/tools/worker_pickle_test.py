"""Tests of pickling for workers without TensorFlow's modules."""

import os
import pickle

import tensorflow.compat.v1 as tf

from agents.scripts import networks
from agents.training import console
from agents.training import policy_module
from agents.tools import attr_dict
from agents.tools import worker_pickle


def test_functions_and_classes_of_tensorflow_modules_are_deferred():
    config = attr_dict.AttrDict(
        network=networks.feed_forward_gaussian,
        optimizer=tf.train.AdamOptimizer, getcwd=os.getcwd, layers=(8,))
    loaded = pickle.loads(worker_pickle.dumps(config))
    assert repr(loaded.network) == (
        '<agents.scripts.networks:feed_forward_gaussian, imported on first '
        'use>')
    assert isinstance(loaded.optimizer, worker_pickle.Deferred)
    assert (loaded.network.__module__, loaded.network.__qualname__) == (
        'agents.scripts.networks', 'feed_forward_gaussian')
    # Others as cloudpickle sends them.
    assert loaded.getcwd is os.getcwd
    assert loaded.layers == (8,)
    assert loaded.network.resolve() is networks.feed_forward_gaussian
    assert loaded.optimizer.__name__ == 'AdamOptimizer'
    assert loaded.optimizer(1e-3).get_name() == 'Adam'
    assert pickle.loads(pickle.dumps(loaded.optimizer)).resolve() is (
        tf.train.AdamOptimizer)


def test_an_instance_of_such_a_class_keeps_its_class():
    # Reduced by its class, and by `copyreg.__newobj__`.
    # pylint: disable-next=protected-access
    filter_class = console._TensorFlowOwnLines
    error, filter_ = pickle.loads(worker_pickle.dumps(
        [policy_module.ExportError('stopped'), filter_class('tensorflow')]))
    assert type(error) is policy_module.ExportError  # pylint: disable=C0123
    assert error.args == ('stopped',)
    assert type(filter_) is filter_class  # pylint: disable=C0123
    assert filter_.name == 'tensorflow'


def test_functions_defined_by_value_travel_by_value():
    # pylint: disable-next=unnecessary-lambda-assignment
    function = lambda: tf.train.AdamOptimizer.__name__
    assert pickle.loads(worker_pickle.dumps(function))() == 'AdamOptimizer'
