"""flashband.build_info() and the import-time warning about backends the GPU could run but
this build lacks (issue 58: never silently less)."""

import subprocess
import sys
import types
import warnings

import pytest

import flashband
from flashband import _build


def test_build_info_matches_the_built_backends():
    info = flashband.build_info()
    assert info["version"] == flashband.__version__
    assert info["backends"] == flashband.built_backends()
    # A CUDA version exactly when GPU backends are in; a cuDNN version exactly with cudnn.
    assert (info["cuda"] is not None) == ("sm80" in info["backends"])
    assert (info["cudnn"] is not None) == ("cudnn" in info["backends"])
    assert (info["cuda_archs"] is not None) == ("sm80" in info["backends"])
    for key in ("cuda", "cudnn"):  # "unknown": cuDNN found without its version header
        if info[key] is not None:
            assert info[key].split(".")[0].isdigit() or info[key] == "unknown", info


@pytest.mark.parametrize("built,gpus,named", [
    (("cpu",), [90], {"sm80", "sm90", "cudnn"}),
    (("cpu",), [80, 86], {"sm80", "cudnn"}),
    (("cpu", "sm80", "cudnn"), [90], {"sm90"}),
    (("cpu", "sm80", "sm90"), [90, 80], {"cudnn"}),
    (("cpu", "sm80", "sm90", "cudnn"), [90], set()),
    (("cpu",), [], set()),      # no GPU: a cpu-only build is all there can be
    (("cpu",), [75, 100], set()),  # GPUs none of the backends' machine code runs on
])
def test_missing_backends_message_names_what_the_gpu_could_run(built, gpus, named):
    message = _build.missing_backends_message(built, gpus)
    if not named:
        assert message is None
        return
    listed = {line.split(":")[0].strip() for line in message.splitlines()[1:-1]}
    assert listed == named, message
    assert "build_info()" in message


def test_warns_once_per_process(monkeypatch):
    monkeypatch.setattr(_build, "_C", types.SimpleNamespace(built_backends=["cpu"]))
    monkeypatch.setattr(_build, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _build.warn_missing_backends(gpus=[90])
        _build.warn_missing_backends(gpus=[90])
    assert len(caught) == 1
    assert "sm90: runs on this machine's GPU (compute capability 9.0)" in str(caught[0].message)


def test_gpu_query_answers_without_a_driver_or_with_one():
    gpus = _build.gpu_compute_capabilities()
    assert all(isinstance(cc, int) and cc >= 10 for cc in gpus), gpus


def test_import_warns_exactly_when_the_gpu_could_run_more():
    """In a fresh interpreter: on a GPU machine with every backend it can run built (the
    install the GPU machine check makes) import is silent; elsewhere it warns only if
    missing_backends_message says so."""
    expected = _build.missing_backends_message(flashband.built_backends(),
                                               _build.gpu_compute_capabilities())
    run = subprocess.run([sys.executable, "-W", "always", "-c", "import flashband"],
                         capture_output=True, text=True, check=True)
    if expected is None:
        assert "flashband was built without" not in run.stderr
    else:
        assert run.stderr.count("flashband was built without") == 1, run.stderr
