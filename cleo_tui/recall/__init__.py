"""Recall with rerank steps, and hippo-memory's recall traces: writing, reading, exporting.

Imports nothing from Textual.
"""
