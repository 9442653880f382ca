"""The README's and docs/python.md's Python examples run as tests, and the stubs agree with the
module (mypy's stubtest) and type-check (mypy --strict)."""

import doctest
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_bandits as kb

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(kb.__file__).parent


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("page", ["README.md", "docs/python.md"])
def test_the_pages_python_examples_run(page, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / page)
    assert blocks, f"{page} has no Python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, page, "exec"), {"__name__": "__example__"})


def test_the_package_docstring_example_runs():
    failures, tried = doctest.testmod(kb, report=True)
    assert tried > 0 and failures == 0


needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed")


@needs_mypy
def test_the_stubs_match_the_module():
    allowlist = Path(__file__).parent / "stubtest_allowlist.txt"
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "kernel_bandits._core", "--ignore-disjoint-bases",
         "--allowlist", str(allowlist)],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@needs_mypy
def test_the_examples_type_check(tmp_path):
    code = "\n".join(python_blocks(ROOT / "README.md"))
    (tmp_path / "readme_example.py").write_text(code)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(tmp_path / "readme_example.py")],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_figure1_example_draws_the_bands_in_the_papers_order(tmp_path):
    spec = importlib.util.spec_from_file_location("figure1_bands", ROOT / "python/examples/figure1_bands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(str(tmp_path))
    assert (tmp_path / "figure1_bands.csv").stat().st_size > 0
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "figure1_bands.png").stat().st_size > 0
    width = {name: ucb - lcb for name, (_, lcb, ucb) in results.items()}
    slack = 1e-9
    assert (width["CMM-UCB"] <= width["DMM-UCB"] + slack).all()
    assert (width["DMM-UCB"] <= width["AMM-UCB"] + slack).all()
