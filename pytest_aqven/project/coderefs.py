"""Code references (`run:` values): resolve them to Python callables of the project's package."""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable

from .paths import outside


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
        existing.__dict__["types"] = module       # a submodule is an attribute of its package


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
    spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[str(root)]) \
        if init.exists() else None
    if spec is None:                      # no __init__.py: a package of the folder alone
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(root)]
    module = importlib.util.module_from_spec(spec)
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]          # another project with the same package name was mounted before
    sys.modules[package] = module
    types_module = TYPES_MODULES.get((package, str(root)))
    if types_module is not None:          # before __init__.py runs: it may import .types itself
        sys.modules[f"{package}.types"] = types_module
        module.__dict__["types"] = types_module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def module_name(package: str, root: Path, file: Path) -> str:
    """The module of a file of the project, by where it lies (a symlink is not followed: the check that the
    file's content lies inside the project is `_project_file`'s caller's)."""
    rel = Path(os.path.normpath(os.path.abspath(file))).relative_to(root.resolve()).with_suffix("")
    return ".".join((package, *rel.parts))


def _project_file(module: str, package: str, root: Path) -> Path | None:
    """The file of a module of the project's package, or None for another package's."""
    if module != package and not module.startswith(package + "."):
        return None
    base = root.joinpath(*module.split(".")[1:])
    for candidate in (base.with_name(base.name + ".py") if module != package else None, base / "__init__.py"):
        if candidate is not None and (candidate.exists() or candidate.is_symlink()):
            return candidate
    return None


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
        try:
            module = module_name(package, root, here)
        except ValueError:
            raise CodeRefError(f"{ref} names a function of {here}, which is outside the project") from None
        function = ref
        if not here.exists():
            raise CodeRefError(f"{ref} names a function of {here.name}, which does not exist")
    else:
        target, function = ref.rsplit(":", 1)
        if target.startswith("@root."):
            module = f"{package}.{target[len('@root.'):]}"
        elif target.startswith("@here."):
            name = target[len("@here."):]
            if not name or "" in name.split("."):
                raise CodeRefError(f"{ref}: {target} is not a module name beside the file (@here.<module>)")
            module = module_name(package, root, here.parent / (name.replace(".", "/") + ".py"))
        elif target.startswith("@"):
            raise CodeRefError(f"{ref}: alias {target.split('.')[0]} is not supported (use @root or @here)")
        else:
            module = target
    file = _project_file(module, package, root)
    problem = outside(root, file) if file is not None else None
    if problem is not None:       # a symlink (or `@here..`) out of the project: never imported
        raise CodeRefError(f"{ref}: module {module}: its file {problem}: refused")
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
