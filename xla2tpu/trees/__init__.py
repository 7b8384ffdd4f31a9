"""Walks of CPython's tree that every stage shares: the blocks of a compound statement
(`blocks`), children in source order as LibCST walks them (`order`), and dotted names read
off a node (`names`).

Receives: an `ast` node. Hands on: nodes, names and line ranges. Imports no other stage, and
never LibCST: a run whose files are all cached must not load it.
"""
