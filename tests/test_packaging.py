"""`pip install .` (not editable) carries everything the runtime needs, under one namespace."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from the checkout, offline (no build isolation)."""
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = tmp_path_factory.mktemp("src")
    for name in ("schema", "redact", "hooks", "daemon", "deploy", "bin"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("workspace_daemon-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed (not editable) into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def _top_level(names: list[str]) -> set[str]:
    return {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}


def test_wheel_contains_migrations_and_both_commands(wheel: Path) -> None:
    """The wheel holds every schema/sql file, the wsd entry point and the wsd-hook script."""
    names = zipfile.ZipFile(wheel).namelist()
    for sql in sorted((REPO / "schema" / "sql").rglob("*.sql")):
        assert f"wsd/schema/sql/{sql.parent.name}/{sql.name}" in names
    assert any(n.endswith(".data/scripts/wsd-hook") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "wsd = wsd.daemon.ops.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_wheel_installs_only_the_wsd_namespace(wheel: Path, installed: Path) -> None:
    """Only `wsd` lands at the top of site-packages (no daemon, hooks, redact or schema folders)."""
    code = {n for n in _top_level(zipfile.ZipFile(wheel).namelist()) if not n.endswith(".data")}
    assert code == {"wsd"}
    on_disk = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")}
    assert on_disk - {"bin"} == {"wsd"}
    assert not (installed / "wsd" / "__init__.py").exists()  # a namespace: nothing to clash on


def test_installed_beside_schema_and_python_daemon_all_three_work(
    installed: Path, tmp_path: Path
) -> None:
    """In one environment with the PyPI `schema` and `python-daemon`, no folder is shared, all
    three import from their own files and work, and the installed wsd runs `wsd init`."""
    theirs: set[str] = set()
    for dist in ("schema", "python-daemon"):
        files = metadata.files(dist) or []
        theirs |= _top_level([str(f) for f in files]) - {"__pycache__"}
    assert {"schema", "daemon"} <= theirs
    ours = {p.name for p in installed.iterdir()}
    assert not ours & theirs, f"shared top-level names: {ours & theirs}"
    deps = sysconfig.get_paths()["purelib"]
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
        "import schema, daemon, daemon.daemon;"
        "assert schema.Schema(int).validate(3) == 3;"
        "assert hasattr(daemon, 'DaemonContext'), daemon.__file__;"
        "from wsd import schema as wsd_schema; from wsd.daemon.ops import cli;"
        "from wsd.daemon.memory.agent import agent_memory;"
        "assert wsd_schema.__file__.startswith(sys.argv[1]), wsd_schema.__file__;"
        "assert not schema.__file__.startswith(sys.argv[1]), schema.__file__;"
        "sys.exit(cli.main(['--workspace', sys.argv[3], 'init']))"
    )
    # -S: no site, so the editable checkout on sys.path cannot stand in for the install.
    result = subprocess.run(
        [sys.executable, "-S", "-c", code, str(installed), deps, str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "schema v" in result.stdout
    assert (tmp_path / "ws" / ".os" / "memory" / "memory.db").exists()
