"""The revision of KernelIndex's own code, for the implementation documents of its built-in kernels."""

import hashlib
import os
import subprocess
from typing import Optional


def project_revision(source_file: str) -> str:
    """The revision of KernelIndex's own code: the first git commit that gave ``source_file`` the content it
    has at HEAD, where the file on disk is HEAD's, else a digest of ``source_file``.

    Not HEAD, nor the last commit that changed the file: neither an unrelated commit nor a change and its
    revert may make the same kernel look like a new revision (and split its reruns' implementation documents).

    A GPU host may run a copy of the tree whose git metadata is missing, or older than its
    files (seen on the lent H200s: the copy's HEAD was an older commit than the code that
    ran). A commit is named only where its blob of this file is the file on disk; the
    source digest still tells two versions of a kernel apart.
    """
    folder, name = os.path.split(os.path.abspath(source_file))

    def git(*args, check=True):
        return subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=10, check=check)

    try:
        blob = git("rev-parse", f"HEAD:./{name}").stdout.strip()  # fails where HEAD lacks the file
        if git("diff", "--quiet", "HEAD", "--", name, check=False).returncode == 0:  # as committed (filters applied)
            history = git("log", "--format=commit %H", "--raw", "--no-abbrev", "--", name).stdout
            first = _first_commit_with(blob, history)
            if first is not None:
                return first
    except (OSError, subprocess.SubprocessError):
        pass
    with open(source_file, "rb") as source:
        return "source-sha256:" + hashlib.sha256(source.read()).hexdigest()[:16]


def _first_commit_with(blob: str, raw_log: str) -> Optional[str]:
    """The oldest commit in ``git log --format='commit %H' --raw --no-abbrev`` output of one file that left the
    file as ``blob``; None where none did (a shallow history)."""
    first, commit = None, None
    for line in raw_log.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.startswith(":") and line.split()[3] == blob:
            first = commit  # the log runs newest first
    return first
