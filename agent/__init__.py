"""The Agent: every operation a user has on the world graph, and the exploration loop of partially observed
worlds."""
