"""Clients of rollout-ingest for trainers: read a table's rollouts over Arrow Flight, a share per rank."""

from rollout_ingest.tail import RolloutTail

__all__ = ["RolloutTail"]
