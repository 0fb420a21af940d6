"""PDDL as data: s-expressions, formulas, the domain and problem model (types, `either`, constants, ADL,
action costs), invariants, and the verification of changes and goals. The bundled domains are data
folders beside the modules (`household`, `rearrange`, the games' domains)."""
