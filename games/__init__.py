"""Partially observed environments (TextWorld-Express, TextWorld) behind one interface, the sensors that turn
their structured outputs into graph changes, and the edit oracle of the LLM mode."""
