"""`pip install .` (not editable) carries everything the runtime needs: migrations, scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from the checkout, offline (no build isolation)."""
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = tmp_path_factory.mktemp("src")
    for name in ("schema", "hooks", "daemon", "bin"):
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


def test_wheel_contains_migrations_and_both_commands(wheel: Path) -> None:
    """The wheel holds every schema/sql file, the wsd entry point and the wsd-hook script."""
    names = zipfile.ZipFile(wheel).namelist()
    for sql in sorted((REPO / "schema" / "sql").rglob("*.sql")):
        assert f"schema/sql/{sql.parent.name}/{sql.name}" in names
    assert any(n.endswith(".data/scripts/wsd-hook") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "wsd = daemon.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_migrates_without_the_checkout(wheel: Path, tmp_path: Path) -> None:
    """Installed (not editable) elsewhere, the package finds its migrations and runs wsd init."""
    target = tmp_path / "site"
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
    )
    deps = sysconfig.get_paths()["purelib"]
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
        "import schema, daemon.cli;"
        "assert schema.__file__.startswith(sys.argv[1]), schema.__file__;"
        "sys.exit(daemon.cli.main(['--workspace', sys.argv[3], 'init']))"
    )
    # -S: no site, so the editable checkout on sys.path cannot stand in for the install.
    result = subprocess.run(
        [sys.executable, "-S", "-c", code, str(target), deps, str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "schema v1" in result.stdout or "schema v" in result.stdout
