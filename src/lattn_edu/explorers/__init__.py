"""Interactive explorers: live widgets in a kernel, working sliders on the static site.

``CATALOG`` maps each explorer's name to its class; every class builds with no arguments.
It is discovered, not kept by hand: every public module of this package that defines an
:class:`Explorer` subclass with a ``name`` adds it, so a new chapter's explorer is one new
module, and its class is importable from here by its class name.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Explorer, ImpossibleSetting


def discover_explorers() -> dict[str, type[Explorer]]:
    """{name: class} for every named Explorer subclass defined in this package's public modules."""
    catalog: dict[str, type[Explorer]] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Explorer) and value.name
                    and value.__module__ == module.__name__):
                if value.name in catalog:
                    raise ValueError(f"explorer name {value.name!r} is used by both "
                                     f"{catalog[value.name].__qualname__} and {value.__qualname__}")
                catalog[value.name] = value
    return dict(sorted(catalog.items()))


CATALOG = discover_explorers()
globals().update({cls.__name__: cls for cls in CATALOG.values()})

__all__ = ["CATALOG", "Explorer", "ImpossibleSetting", "discover_explorers",
           *sorted(cls.__name__ for cls in CATALOG.values())]
