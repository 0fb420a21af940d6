"""Test support shared by several test modules (fixtures live in the conftest files)."""
