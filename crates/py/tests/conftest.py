"""Shared set-up of the Python tests: the repository, and the `rtvmm` command line the
package is compared with (`RTVMM_BIN`, which `cargo test` sets; else the debug build)."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _cli_path():
    given = os.environ.get("RTVMM_BIN")
    if given:
        return Path(given)
    built = REPO / "target" / "debug" / "rtvmm"
    return built if built.exists() else None


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def cli():
    """Runs `rtvmm ARGS` from the repository's root: (exit code, stdout, stderr)."""
    path = _cli_path()
    if path is None:
        pytest.skip("no rtvmm binary: set RTVMM_BIN or run `cargo build` first")

    def run(*args):
        done = subprocess.run(
            [str(path), *map(str, args)], cwd=REPO, capture_output=True, text=True
        )
        return done.returncode, done.stdout, done.stderr

    return run
