"""Typed events, the per-client queues that hold them, and the buses that carry them."""
