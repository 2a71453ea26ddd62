"""Prefect tasks of citesum and the plain functions they wrap.

Modules hold plain functions (testable without an engine); the Prefect task
wrappers live in the ``*_tasks`` modules next to them.
"""
