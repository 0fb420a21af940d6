"""The store backends of the world graph."""
