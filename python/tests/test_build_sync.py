"""scripts/build_sync.sh: on a warm GPU machine a source whose content went back to an older
version, with an older file time than its objects, must be touched before the build."""

import os
import pathlib
import subprocess

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "build_sync.sh"
OLD = 946684800  # 2000-01-01, older than any build


def sync(root):
    subprocess.run(["bash", "-c", f'source "{SCRIPT}" && touch_changed_sources'], cwd=root, check=True)


def test_touches_exactly_the_files_whose_content_changed(tmp_path):
    files = {"src/k.cuh": "variant", "src/same.h": "same", "tests/t.cpp": "t", "CMakeLists.txt": "p",
             "python/__pycache__/m.pyc": "cache"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    sync(tmp_path)  # the build that saw the variant
    (tmp_path / "src/k.cuh").write_text("base")  # the next call's copy: older content, older time
    (tmp_path / "src/new.h").write_text("new")
    (tmp_path / "python/__pycache__/m.pyc").write_text("other")
    for name in ("src/k.cuh", "src/same.h", "src/new.h", "tests/t.cpp", "python/__pycache__/m.pyc"):
        os.utime(tmp_path / name, (OLD, OLD))
    sync(tmp_path)
    touched = {name for name in ("src/k.cuh", "src/same.h", "src/new.h", "tests/t.cpp", "python/__pycache__/m.pyc")
               if (tmp_path / name).stat().st_mtime > OLD}
    assert touched == {"src/k.cuh", "src/new.h"}
    # The record now holds the new content: a third pass touches nothing.
    os.utime(tmp_path / "src/k.cuh", (OLD, OLD))
    sync(tmp_path)
    assert (tmp_path / "src/k.cuh").stat().st_mtime == OLD
