"""The world-state graph: entities, facts, verified changes and their history, over store backends (the
embedded sqlite default, Neo4j over Bolt)."""
