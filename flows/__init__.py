"""Prefect flows of citesum. Each reads top to bottom as its pipeline."""
