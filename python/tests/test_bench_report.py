"""bench/run.py without a GPU: --help, and the report (tables, footnotes, plots when
matplotlib is present) rendered from synthetic results."""

import pathlib
import subprocess
import sys

RUN = pathlib.Path(__file__).resolve().parents[2] / "bench" / "run.py"


def test_help():
    out = subprocess.run([sys.executable, str(RUN), "--help"], capture_output=True, text=True,
                         check=True).stdout
    for flag in ("--quick", "--out", "--backends", "--report-only", "--selftest"):
        assert flag in out


def test_selftest_renders_every_section(tmp_path):
    subprocess.run([sys.executable, str(RUN), "--selftest", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    md = (tmp_path / "benchmarks.md").read_text()
    for title in ("Dense prefill", "Sliding window", "Chunked prefill", "Paged KV", "Decode"):
        assert title in md
    assert "best flashband / best peer" in md and "[^1]:" in md  # ratios and error footnotes
    assert (tmp_path / "results.json").stat().st_size > 0
    pngs = sorted(p.name for p in (tmp_path / "img").glob("*.png")) if (tmp_path / "img").exists() else []
    assert len(pngs) <= 4  # the GPU machine returns at most 8 files
    # re-rendering the written JSON gives the same page
    again = tmp_path / "again"
    subprocess.run([sys.executable, str(RUN), "--report-only", str(tmp_path / "results.json"),
                    "--out", str(again)], check=True, capture_output=True)
    assert (again / "benchmarks.md").read_text() == md
