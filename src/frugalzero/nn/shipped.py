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


def resolve_net_path(spec: str | Path) -> Path:
    """A shipped net's name names its file inside the package; anything else is a path."""
    if str(spec) in SHIPPED_NETS:
        return Path(str(resources.files("frugalzero") / "assets" / f"{spec}.safetensors"))
    return Path(spec)
