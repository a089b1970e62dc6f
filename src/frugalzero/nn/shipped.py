"""The nets shipped inside the package, by name; imports no torch so CLIs can name them in help.

``default`` is the strongest at equal nodes (10x128 with squeeze-excitation); ``small`` (6x64)
costs about a third as much a node, for CPU users under a clock and for cheap jobs such as
ε-Explore's walks.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_NET = "default"
SHIPPED_NETS = ("default", "small")
NET_HELP = "network file, or a shipped net: 'default' (strongest) or 'small' (3x cheaper a node)"


def shipped_net_path(name: str) -> Path:
    """The file of the shipped net ``name`` (one of SHIPPED_NETS)."""
    if name not in SHIPPED_NETS:
        raise ValueError(f"no shipped net named {name!r}")
    return Path(str(resources.files("frugalzero") / "assets" / f"{name}.safetensors"))


def resolve_net_path(spec: str | Path) -> Path:
    """A shipped net's name names its file; anything else is a path."""
    return shipped_net_path(str(spec)) if str(spec) in SHIPPED_NETS else Path(spec)
