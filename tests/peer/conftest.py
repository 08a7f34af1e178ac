# The live transformers peer (docs/design.md §13): fixtures shared by its tests — the attngeo
# executable, and the skip (or, with ATTNGEO_REQUIRE_TRANSFORMERS=1 as in CI, the failure) where
# torch or transformers is absent.
import importlib.util
import os
import pathlib
import subprocess

import pytest


def pytest_configure(config):
    missing = [m for m in ("torch", "transformers", "safetensors") if not importlib.util.find_spec(m)]
    if missing and os.environ.get("ATTNGEO_REQUIRE_TRANSFORMERS", "0") == "1":
        raise pytest.UsageError(
            f"ATTNGEO_REQUIRE_TRANSFORMERS=1 but {', '.join(missing)} cannot be imported "
            "(scripts/torch-build.sh makes a venv with torch and transformers)"
        )


@pytest.fixture(scope="session")
def attngeo_exe():
    exe = os.environ.get("ATTNGEO_EXE")
    if not exe or not pathlib.Path(exe).is_file():
        pytest.fail("ATTNGEO_EXE must name the attngeo executable the peer checks")
    return exe


@pytest.fixture(scope="session")
def run_attngeo(attngeo_exe):
    def run(*args):
        return subprocess.run([attngeo_exe, *map(str, args)], capture_output=True, text=True)

    return run
