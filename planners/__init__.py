"""Planning on the graph: ground states and simulation, relevance pruning, the symbolic planners behind
one call, plan execution, and Monte Carlo tree search where facts are unknown (`kgplan.planners.mcts`, on
the ground task of `grounding` and FF's heuristic of `relaxation`)."""
