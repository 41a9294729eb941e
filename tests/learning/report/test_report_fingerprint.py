"""Does the fingerprint hold exactly the files the run executed?"""

from __future__ import annotations

from pathlib import Path

from learning.report import engine_files
from learning.report.fingerprint import REPO_ROOT


def _packages(report):
    files = report.data["fingerprint"]["files"]
    return files, {Path(p).parent.parent.name for p in files if Path(p).is_absolute()}


def test_engine_files_are_every_loaded_learning_module_and_the_schema(cpu_run):
    files, _ = _packages(cpu_run())
    for name in (
        "learning/ops/spec.py",
        "learning/ops/softmax/__init__.py",
        "learning/correctness.py",
        "learning/bench/engine.py",
        "learning/report/validate.py",
        "learning/schemas/report-v2.json",
    ):
        assert name in files
    assert all(not p.startswith("results/") for p in files)


def test_engine_files_are_found_through_sys_modules():
    names = {path.relative_to(REPO_ROOT).as_posix() for path in engine_files()}
    assert {
        "learning/__init__.py",
        "learning/runtime.py",
        "learning/schemas/report-v2.json",
    } <= names
    assert all(name.startswith("learning/") for name in names)


def test_a_reference_run_has_no_learner_files(cpu_run):
    report = cpu_run("reference")
    files, packages = _packages(report)
    learner = report.data["settings"]["learner_package"]
    reference = report.data["settings"]["reference_package"]
    assert not any(p.startswith("exercises/") for p in files)
    assert not any(f"/{learner}/" in p for p in files), "a reference run fingerprinted the learner"
    helpers = [p for p in files if p.endswith(f"/{reference}/kernels/_rows.py")]
    assert helpers, "the helper module the kernel imports is part of what ran"
    assert any(p.endswith(f"/{reference}/__init__.py") for p in files)


def test_a_learner_run_has_the_learner_files_and_the_reference(cpu_run):
    report = cpu_run("learner")
    files, _ = _packages(report)
    learner = report.data["settings"]["learner_package"]
    reference = report.data["settings"]["reference_package"]
    for package in (learner, reference):
        for name in (
            "__init__.py",
            "kernels/__init__.py",
            "kernels/softmax.py",
            "kernels/_rows.py",
        ):
            assert any(p.endswith(f"/{package}/{name}") for p in files), (package, name)
