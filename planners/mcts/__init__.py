"""Monte Carlo tree search over a belief (LLM-MCTS, MC-DML, DR-MCTS), for goals that no symbolic plan
reaches because facts are unknown.

Each simulation samples a world from the belief and simulates it with the domain's own actions, grounded
once (kgplan.planners.grounding). The tree is over histories of actions and what they showed (POMCP),
so a node's actions are chosen on what the agent would know. Selection is PUCT,
``Q + c*P(a)*sqrt(N)/(1+N(a))``, with a prior policy P that is uniform (UCT), the belief's mass at the
places an action reaches, or an LLM's (kgplan.language.mcts). Rollouts are random (draw from the rollout
prior) to the horizon, as in the papers. Backups are the Monte Carlo return, IS-MCTS's or DR-MCTS's
(`estimators`). kgplan's own improvements are switches of `Settings`: a belief-greedy policy (look where
the most belief mass is per step, pick up what is seen, deliver once all is found, on FF's heuristic,
kgplan.planners.relaxation) mixed into the prior, rollouts that follow it cut off at gamma**h, the
hand-over to Fast Downward once every goal item is seen, and the belief averaged with uniform.

Modules: `belief` (belief math, the domain's [belief] table), `observe` (what a state shows), `priors`,
`estimators` (DR-MCTS), `search` (the tree, one decision), `graph_io` (searchers and decisions on a
world graph, beliefs stored beside it). The search methods (which belief, prior and settings) are
registered in kgplan.agent.search.
"""
