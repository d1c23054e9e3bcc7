"""hscale installs as one namespace: a wheel puts only ``hscale`` into site-packages, and a
user's own ``train.py``, ``design.py`` or ``harness/`` in the working directory shadows nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"hscale": "hscale", "hscale.design": "design", "hscale.harness": "harness",
           "hscale.train": "train", "hscale.analysis": "analysis"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed_and_mapped():
    """A new subpackage that pyproject does not list would be missing from the wheel."""
    setuptools = _project()
    assert setuptools["package-dir"] == FOLDERS
    found = set()
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([package, *parts]))
    assert found == set(setuptools["packages"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (an in-tree build would leave build/ here)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in FOLDERS.values():
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(out), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    (path,) = out.glob("hscale-*.whl")
    return path


def test_the_wheel_holds_only_the_hscale_namespace(wheel):
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"hscale", next(t for t in tops if t.endswith(".dist-info"))}
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("hscale/design/data/oa_classes.json", "hscale/train/policy/data/hscale-tiny.pt",
                 "hscale/analysis/data/reported.csv",
                 "hscale/harness/verl_agent_loop.py", "hscale/cli/__init__.py"):
        assert data in names


def test_an_installed_wheel_puts_only_hscale_in_site_packages(wheel, tmp_path):
    """Installed --no-deps into a fresh venv that sees this environment's packages (so its
    imports resolve), site-packages gains hscale and its dist-info only, and a user's
    train.py, design.py and harness/ beside the command shadow none of it."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    before = set(os.listdir(site)) if site.exists() else set()
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q",
                              "--no-index", str(wheel)], capture_output=True, text=True,
                             timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    added = {n for n in set(os.listdir(site)) - before if n != "__pycache__"}
    assert {n for n in added if not n.endswith(".dist-info")} == {"hscale"}, added
    user = _user_folder(tmp_path / "project")
    code = ("import hscale.train, hscale.contracts, hscale.design, hscale.harness, "
            "hscale.analysis, pathlib, sys; "
            "print(pathlib.Path(hscale.train.__file__).parent.parent.parent == "
            f"pathlib.Path({str(site)!r}))")
    run = subprocess.run([str(python), "-c", code], cwd=user, capture_output=True, text=True,
                         env=_clean_env())
    assert run.returncode == 0 and run.stdout.strip() == "True", run.stderr[-2000:]
    cli = subprocess.run([str(env_dir / "bin" / "hscale"), "--help"], cwd=user,
                         capture_output=True, text=True, env=_clean_env())
    assert cli.returncode == 0 and "design" in cli.stdout, cli.stderr[-2000:]


def _user_folder(folder: Path) -> Path:
    """A typical ML repository: its own train.py, design.py and a harness/ package."""
    folder.mkdir()
    (folder / "train.py").write_text("raise SystemExit('the user train.py ran')\n")
    (folder / "design.py").write_text("raise SystemExit('the user design.py ran')\n")
    (folder / "harness").mkdir()
    (folder / "harness" / "__init__.py").write_text("raise SystemExit('user harness')\n")
    return folder


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_installed_package_is_not_shadowed_by_a_users_modules(tmp_path):
    """This environment's hscale (editable or not), from a folder holding train.py,
    design.py and harness/: the imports and the command line reach hscale's own."""
    user = _user_folder(tmp_path / "project")
    code = ("import hscale.train, hscale.contracts, hscale.design._space, "
            "hscale.harness._harness; print('ok')")
    run = subprocess.run([sys.executable, "-c", code], cwd=user, capture_output=True,
                         text=True, env=_clean_env())
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
    cli = subprocess.run([sys.executable, "-m", "hscale.cli", "design", "space"], cwd=user,
                         capture_output=True, text=True, env=_clean_env())
    assert cli.returncode == 0 and "243 configurations" in cli.stdout, cli.stderr[-2000:]
