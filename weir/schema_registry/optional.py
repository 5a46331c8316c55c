"""The format libraries are extras of the SDK (``pip install 'weir[avro]'``, ``weir[json]``):
imported when a serializer is built, so that the SDK imports without them."""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS = {"fastavro": "avro", "jsonschema": "json"}


def require(module: str) -> ModuleType:
    """``module`` imported, or ImportError saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        raise ImportError(f"{top} is needed for this serializer: pip install 'weir[{EXTRAS.get(top, top)}]'") from error
