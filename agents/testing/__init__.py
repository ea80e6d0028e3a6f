"""Test doubles and contract checks shared by the tests of the package.

`MockEnvironment` and `MockAlgorithm` are also exported by `agents.tools`
under their 2017 names.
"""
