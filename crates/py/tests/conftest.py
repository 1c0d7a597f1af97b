"""Shared set-up of the Python tests: the repository, and the `rtvmm` command line the
package is compared with (`RTVMM_BIN`, which `cargo test` sets; else the debug build).

With `RTVMM_TEST_WITHOUT=pandas,matplotlib` those packages cannot be imported, as on a
machine without them: `cargo test` runs the suite that way too."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HIDDEN = [name for name in os.environ.get("RTVMM_TEST_WITHOUT", "").split(",") if name]


class _Hide:
    """A finder that refuses the hidden packages, before any other finder is asked."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError("hidden by RTVMM_TEST_WITHOUT: %s" % name, name=name)
        return None


if HIDDEN:
    sys.meta_path.insert(0, _Hide())


def rows(table):
    """A table's rows as dicts, whether it is a DataFrame or already a list."""
    return table if isinstance(table, list) else table.to_dict("records")

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
