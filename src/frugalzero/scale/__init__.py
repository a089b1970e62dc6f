"""Data generation on Ray: self-play, ε-Explore labelling and Stockfish games on many machines.

The trainer stays on one machine (the driver). Per generation step the driver publishes the
network once in Ray's object store, hands games out in chunks to Ray actors, and receives every
finished game as soon as it ends (streamed back), so it writes the shards itself with the same
``ShardWriter`` as a local run: the output is the same kind as a local run's. A worker that
dies is replaced, and the games it had not finished are played again, by whichever worker is
free. Ray is an optional extra (``pip install "frugalzero[ray]"``); nothing here imports it
until it is used.
"""

from frugalzero.scale.config import RayConfig

__all__ = ["RayConfig"]
