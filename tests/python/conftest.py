# Shared fixtures of the Python module's tests: the `attngeo` CLI they compare against (CTest
# sets ATTNGEO_EXE and PYTHONPATH=build/python) and a helper that runs it.
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    exe = os.environ.get("ATTNGEO_EXE")
    if not exe or not os.access(exe, os.X_OK):
        pytest.skip("ATTNGEO_EXE is not set to the attngeo executable (CTest sets it)")

    def run(*arguments):
        done = subprocess.run([exe, *map(str, arguments)], capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(f"attngeo {' '.join(map(str, arguments))}: exit "
                                 f"{done.returncode}: {done.stderr.strip()}")
        return done.stdout

    run.failing = lambda *arguments: subprocess.run([exe, *map(str, arguments)],
                                                    capture_output=True, text=True)
    return run


def csv_text_columns(text):
    """A CSV printed by the CLI as {column: [field texts]}."""
    lines = text.strip().splitlines()
    header = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:]]
    return {name: [row[k] for row in rows] for k, name in enumerate(header)}
