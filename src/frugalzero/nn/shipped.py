"""The nets shipped inside the package, by name; imports no torch so CLIs can name them in help.

``medium`` (10x128 with squeeze-excitation) is the strongest at equal nodes; ``small`` (6x64)
costs about a third as much a node on a CPU, for play under a clock there and for cheap jobs
such as ε-Explore's walks. ``default`` names ``medium``'s file wherever a net searches a fixed
number of nodes; ``frugalzero uci`` (and so ``net:default?tc=…``) resolves it to whichever of the
two is stronger on the machine under a clock (``nn.choice``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_NET = "default"
SHIPPED_NETS = ("default", "medium", "small")
FILES = {"default": "default", "medium": "default", "small": "small"}  # name -> asset
NET_HELP = (
    "network file, or a shipped net: 'medium' (strongest at equal nodes), 'small' (3x cheaper a "
    "node on a CPU) or 'default' (medium; the UCI engine plays whichever is stronger here under "
    "a clock)"
)


def resolve_net_path(spec: str | Path) -> Path:
    """A shipped net's name names its file inside the package; anything else is a path."""
    if str(spec) in SHIPPED_NETS:
        asset = FILES[str(spec)]
        return Path(str(resources.files("frugalzero") / "assets" / f"{asset}.safetensors"))
    return Path(spec)
