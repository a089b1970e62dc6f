"""A network's weights on their way to another process (an inference process over a pipe, a
Ray worker through the object store): plain numpy arrays, which pickle compactly and which the
object store shares zero-copy, and back to tensors on the other side."""

from __future__ import annotations

import numpy as np
import torch


def weights_to_arrays(module: torch.nn.Module) -> dict[str, np.ndarray]:
    """``module``'s state dict as CPU numpy arrays. For a module on the CPU they share its
    memory, so send them before the module changes again."""
    return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}


def arrays_to_state_dict(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The state dict for ``load_state_dict``, exactly the sent values. Read-only arrays (the
    object store hands those out) are copied: torch wants writable memory."""
    return {k: torch.from_numpy(a if a.flags.writeable else np.array(a)) for k, a in arrays.items()}
