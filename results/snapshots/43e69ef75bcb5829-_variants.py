"""A reference kernel module with a few lines of its source rewritten, for a probe to time.

A probe that asks "what does this line cost?" times the reference against the same module with
that line changed. ``rewritten(module, rewrites, directory)`` copies the module's source, applies
each ``(old, new, count)`` rewrite (``old`` must occur exactly ``count`` times, so a reference
that has moved on stops the probe instead of letting it time an unchanged kernel), makes the
module's relative imports absolute, writes it to ``directory`` (Triton reads a kernel's source
from its file) and imports it under a name of its own, so that its kernels compile apart from
the reference's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def rewritten(module: ModuleType, rewrites, directory: Path, name: str) -> ModuleType:
    source = Path(module.__file__).read_text()
    for old, new, count in rewrites:
        if source.count(old) != count:
            raise SystemExit(
                f"{Path(module.__file__).name} has {source.count(old)} of {old!r}, expected "
                f"{count}; update the probe's rewrites to the reference"
            )
        source = source.replace(old, new)
    package = module.__name__.rpartition(".")[0]
    source = source.replace("\nfrom .", f"\nfrom {package}.")  # a module now, not in a package
    return module_from_source(source, directory, name)


def module_from_source(source: str, directory: Path, name: str) -> ModuleType:
    """``source`` written to ``directory`` (Triton reads a kernel's source from its file) and
    imported as the module ``name``."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    variant = importlib.util.module_from_spec(spec)
    sys.modules[name] = variant
    spec.loader.exec_module(variant)
    return variant
