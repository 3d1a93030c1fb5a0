"""The revision of KernelIndex's own code, for the implementation documents of its built-in kernels."""

import hashlib
import os
import subprocess


def project_revision(source_file: str) -> str:
    """The revision of KernelIndex's own code: the last git commit that changed ``source_file``, where the
    file on disk is that commit's, else a digest of ``source_file``.

    The last commit that changed the file, not HEAD: an unrelated commit must not make the
    same kernel look like a new revision (and split its reruns' implementation documents).

    A GPU host may run a copy of the tree whose git metadata is missing, or older than its
    files (seen on the lent H200s: the copy's HEAD was an older commit than the code that
    ran). A commit is named only where its blob of this file is the file on disk; the
    source digest still tells two versions of a kernel apart.
    """
    folder, name = os.path.split(os.path.abspath(source_file))

    def git(*args, check=True):
        return subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=10, check=check)

    try:
        git("rev-parse", f"HEAD:./{name}")  # fails where HEAD lacks the file
        if git("diff", "--quiet", "HEAD", "--", name, check=False).returncode == 0:  # as committed (filters applied)
            return git("log", "-1", "--format=%H", "--", name).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    with open(source_file, "rb") as source:
        return "source-sha256:" + hashlib.sha256(source.read()).hexdigest()[:16]
