"""A machine without database servers, for README's demo: a copy of the checkout, a bare PATH.

The copy holds the checkout's files as they are (tracked and new, not the ignored ones: no
virtualenv, no SQLite file). Its virtualenv reuses this one's packages through a ``.pth`` file
and carries the stamp ``scripts/setup.sh`` writes after an install, so that the script finds it
done and installs nothing: the run needs no network and takes seconds. The PATH is a directory
of links to the few tools named, so that anything else the scripts call (a database server,
``mysqladmin``, ``apt-get``) is not found.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path


def copy_checkout(root: Path, destination: Path) -> Path:
    """Copy the checkout's tracked and untracked, not ignored, files to ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = root / name
        if source.is_file():  # a deleted, not yet committed file is still listed
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def reuse_virtualenv(checkout: Path, extras: str) -> Path:
    """Give ``checkout`` a virtualenv seeing this one's packages, stamped as installed with
    ``extras`` (the stamp's name is setup.sh's: a digest of pyproject.toml, then the extras)."""
    target = checkout / ".venv"
    venv.EnvBuilder(with_pip=False).create(target)
    packages = Path(sysconfig.get_path("purelib"))
    own_packages = target / packages.relative_to(sys.prefix)
    # addsitedir, not a plain path line: this virtualenv's own .pth files (the editable
    # install's finder) are read too.
    (own_packages / "reused.pth").write_text(f"import site; site.addsitedir({str(packages)!r})\n")
    digest = hashlib.sha1((checkout / "pyproject.toml").read_bytes()).hexdigest()[:12]
    (target / f".installed-{digest}-{extras.replace(',', '-')}").touch()
    return target


def bare_environment(directory: Path, tools: list[str], **variables: str) -> dict[str, str]:
    """An environment whose PATH holds ``tools`` alone, and ``variables``: no DATABASE_URL,
    no virtualenv, no Django settings of the suite."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, f"{tool} is not installed"
        (bin_dir / tool).symlink_to(found)
    return {
        "PATH": str(bin_dir),
        "HOME": str(directory),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        **variables,
    }


def found_on(path: str, *commands: str) -> list[str]:
    """Which of ``commands`` the shell finds on ``path``."""
    return [command for command in commands if shutil.which(command, path=path)]
