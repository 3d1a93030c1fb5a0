"""Environment capture: the CPU as seen here, and a GPU as torch and nvidia-smi would report it."""

import os
import subprocess
from types import SimpleNamespace

import torch

from runners import environment, revision

SMI_LINE = "570.86.15, 1980, 3201, 1980, 3201, 700.00\n"


def test_cpu_environment_describes_this_host():
    described = environment.generate_environment(target="cpu", device="cpu")
    assert described["hardware"]["product"] == described["cpu"]["model"]
    assert described["hardware"]["cores"] == described["cpu"]["cores"] >= 1
    assert described["software"]["torch"] == torch.__version__ and described["software"]["triton"]
    assert "liger" not in described["software"] or described["software"]["liger"]


def test_nvidia_smi_readings_are_parsed(monkeypatch):
    monkeypatch.setattr(environment.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        return SimpleNamespace(stdout=SMI_LINE)

    monkeypatch.setattr(environment.subprocess, "run", run)
    assert environment.nvidia_smi_readings(1) == {
        "driver": "570.86.15", "smClockMHz": 1980.0, "memoryClockMHz": 3201.0, "smClockMaxMHz": 1980.0,
        "memoryClockMaxMHz": 3201.0, "powerLimitW": 700.0}
    assert calls[0][-2:] == ["-i", "1"]


def test_missing_or_failing_nvidia_smi_gives_nothing(monkeypatch):
    monkeypatch.setattr(environment.shutil, "which", lambda name: None)
    assert environment.nvidia_smi_readings(0) == {}
    monkeypatch.setattr(environment.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    def fail(command, **kwargs):
        raise subprocess.CalledProcessError(9, command)

    monkeypatch.setattr(environment.subprocess, "run", fail)
    assert environment.nvidia_smi_readings(0) == {}


def test_gpu_environment_from_torch_and_nvidia_smi(monkeypatch):
    properties = SimpleNamespace(name="NVIDIA H200", total_memory=150_000_000_000, multi_processor_count=132,
                                 L2_cache_size=62_914_560)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: properties)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: (9, 0))
    monkeypatch.setattr(environment, "nvidia_smi_readings", lambda index: {"driver": "570.86.15", "smClockMHz": 1980.0})
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    described = environment.generate_environment(target="cuda", device="cuda:0")
    hardware = described["hardware"]
    assert (hardware["vendor"], hardware["product"], hardware["architecture"]) == ("nvidia", "NVIDIA H200", "sm_90")
    assert hardware["name"] == "NVIDIA H200" and hardware["smCount"] == 132
    assert hardware["memoryBytes"] == 150_000_000_000 and hardware["l2CacheBytes"] == 62_914_560
    assert hardware["clocks"] == {"smClockMHz": 1980.0}
    assert described["software"]["driver"] == "570.86.15" and described["software"]["cuda"] == "12.8"
    assert described["target"] == "cuda" and described["cpu"]["cores"] >= 1


def test_project_revision_names_the_first_commit_of_the_files_content_only_where_it_holds_the_file(tmp_path):
    git = {"env": {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                   "GIT_COMMITTER_EMAIL": "t@t"}, "cwd": tmp_path, "check": True, "capture_output": True}
    kernel = tmp_path / "kernel.py"
    kernel.write_text("version = 1\n")
    subprocess.run(["git", "init", "-q"], **git)
    subprocess.run(["git", "add", "kernel.py"], **git)
    subprocess.run(["git", "commit", "-qm", "v1"], **git)
    head = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.decode().strip()
    assert revision.project_revision(str(kernel)) == head
    (tmp_path / "unrelated.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "unrelated.py"], **git)
    subprocess.run(["git", "commit", "-qm", "unrelated"], **git)
    assert revision.project_revision(str(kernel)) == head  # the kernel's revision, not HEAD's
    kernel.write_text("version = 1.5\n")
    subprocess.run(["git", "commit", "-qam", "a change"], **git)
    changed_commit = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.decode().strip()
    assert revision.project_revision(str(kernel)) == changed_commit
    subprocess.run(["git", "revert", "--no-edit", "HEAD"], **git)
    assert revision.project_revision(str(kernel)) == head  # the same content as v1: v1's revision

    kernel.write_text("version = 2\n")  # newer than the commit: a copy with stale git metadata
    changed = revision.project_revision(str(kernel))
    assert changed.startswith("source-sha256:") and changed != head
    untracked = tmp_path / "other.py"
    untracked.write_text("version = 2\n")
    assert revision.project_revision(str(untracked)) == changed
