"""Chess for networks: the 119-plane encoding, the 4672-move index, histories, start positions.

The rules themselves are python-chess's; this package only turns positions into tensors and
policy indices and back.
"""

from frugalzero.chess.encoding import HISTORY, NUM_PLANES, board_frame, board_meta, encode
from frugalzero.chess.history import (
    GameHistory,
    NetInput,
    board_frames,
    make_net_input,
    net_input_from_board,
    position_key,
)
from frugalzero.chess.moves import (
    NUM_MOVES,
    index_to_move,
    legal_mask,
    legal_moves_and_indices,
    move_to_index,
    moves_to_indices,
)

__all__ = [
    "HISTORY",
    "NUM_MOVES",
    "NUM_PLANES",
    "GameHistory",
    "NetInput",
    "board_frame",
    "board_frames",
    "board_meta",
    "encode",
    "index_to_move",
    "legal_mask",
    "legal_moves_and_indices",
    "make_net_input",
    "move_to_index",
    "moves_to_indices",
    "net_input_from_board",
    "position_key",
]
