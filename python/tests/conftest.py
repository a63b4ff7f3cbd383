"""Parameterises every test that takes `env` (and `dtype`) over the environments of
_envs.py: (framework, device, backend) x the dtypes that environment tests."""

import pytest

from _envs import all_envs


def pytest_generate_tests(metafunc):
    if "env" not in metafunc.fixturenames:
        return
    envs = all_envs()
    if "dtype" not in metafunc.fixturenames:
        metafunc.parametrize("env", envs)
        return
    params = []
    for p in envs:
        env = p.values[0]
        for dtype in env.dtypes:
            params.append(pytest.param(env, dtype, id=f"{p.id}-{dtype}", marks=p.marks))
    metafunc.parametrize("env,dtype", params)


def pytest_terminal_summary(terminalreporter):
    """How many cases the property tests ran (test_fuzz_bad_input.py), when they ran."""
    from _fuzz_stats import summary

    line = summary()
    if line:
        terminalreporter.write_line(line)
