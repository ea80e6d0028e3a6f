"""Test doubles and contract checks shared by the tests of the package
(`agents.tools` exports the 2017 names `MockEnvironment`, `MockAlgorithm`)."""
