"""Code references (`run:` values): resolve them to Python callables of the project's package."""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable


class CodeRefError(LookupError):
    pass


# (package, module root) -> the project's `<package>.types` module (see typesmodule.py)
TYPES_MODULES: dict[tuple[str, str], Any] = {}


def register_types(package: str, root: Path, module: Any) -> None:
    """The types module user code of this project imports as `<package>.types` (the latest load wins)."""
    key = (package, str(root.resolve()))
    TYPES_MODULES[key] = module
    existing = sys.modules.get(package)
    if existing is not None and key[1] in [str(Path(p).resolve()) for p in getattr(existing, "__path__", [])]:
        sys.modules[f"{package}.types"] = module
        existing.types = module


def mount_package(package: str, root: Path) -> None:
    """Make the module root importable under its package name, wherever the folder lives, with its
    `<package>.types` and (when the engine package is not installed) AQVEN's API names."""
    from ..compat import install
    install()
    root = root.resolve()
    existing = sys.modules.get(package)
    if existing is not None and str(root) in [str(Path(p).resolve()) for p in getattr(existing, "__path__", [])]:
        return
    init = root / "__init__.py"
    if init.exists():
        spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[str(root)])
    else:
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(root)]
    module = importlib.util.module_from_spec(spec)
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]          # another project with the same package name was mounted before
    sys.modules[package] = module
    types_module = TYPES_MODULES.get((package, str(root)))
    if types_module is not None:          # before __init__.py runs: it may import .types itself
        sys.modules[f"{package}.types"] = types_module
        module.types = types_module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def module_name(package: str, root: Path, file: Path) -> str:
    rel = file.resolve().relative_to(root.resolve()).with_suffix("")
    return ".".join((package, *rel.parts))


# (ref, package, root, here) -> (the package module it was resolved under, the callable): every attempt
# resolves its nodes' code again, and path resolution and imports cost more than the node itself
_RESOLVED: dict[tuple[str, str, Path, Path], tuple[Any, Callable[..., Any]]] = {}


def resolve(ref: str, *, package: str, root: Path, here: Path) -> Callable[..., Any]:
    """`fn` (the .py beside the YAML), `@root.mod:fn`, `@here.mod:fn` or `pkg.mod:fn`. Cached while the
    package module it was resolved under is still the mounted one (another project may remount it)."""
    key = (ref, package, root, here)
    hit = _RESOLVED.get(key)
    if hit is not None and sys.modules.get(package) is hit[0]:
        return hit[1]
    fn = _resolve(ref, package=package, root=root, here=here)
    _RESOLVED[key] = (sys.modules.get(package), fn)
    return fn


def _resolve(ref: str, *, package: str, root: Path, here: Path) -> Callable[..., Any]:
    if ":" not in ref:
        module = module_name(package, root, here)
        function = ref
        if not here.exists():
            raise CodeRefError(f"{ref} names a function of {here.name}, which does not exist")
    else:
        target, function = ref.rsplit(":", 1)
        if target.startswith("@root."):
            module = f"{package}.{target[len('@root.'):]}"
        elif target.startswith("@here."):
            module = module_name(package, root, here.parent / (target[len("@here."):].replace(".", "/") + ".py"))
        elif target.startswith("@"):
            raise CodeRefError(f"{ref}: alias {target.split('.')[0]} is not supported (use @root or @here)")
        else:
            module = target
    mount_package(package, root)
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise CodeRefError(f"{ref}: module {module} cannot be imported: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise CodeRefError(f"{ref}: module {module} raised {type(exc).__name__} while importing: {exc}") from None
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise CodeRefError(f"{ref}: module {module} has no function {function}")
    return fn
