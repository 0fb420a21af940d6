"""The language layer: LLM clients with structured replies, the prompts, retrieval, and turning English (state
changes, tasks, game observations) into verified changes and PDDL goals."""
