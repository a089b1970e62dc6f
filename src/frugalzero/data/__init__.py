"""Training data: records, compact checksummed shards, replay window, fast loader, PGN import.

Every data method ends in ``records.GameRecord``; ``shards.ShardWriter`` stores them,
``selection`` picks what training reads (replay window, held-out games) and ``loader`` turns
it into batches of planes, legal masks and targets.
"""
