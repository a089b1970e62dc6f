"""Training data: records, compact checksummed shards, replay window, batches, PGN import.

Every data method ends in ``records.GameRecord``; ``shards.ShardWriter`` stores them,
``selection`` picks what training reads (replay window, held-out games), ``replay`` turns games
into compact samples and ``batches`` turns those into planes, legal masks and targets
(``frugalzero.train.data.PositionSet`` holds a window's samples for the trainer).
"""
