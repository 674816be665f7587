"""Drawings paired with their words, and driven.

`figures` (each course figure: a scenario's runs, its words and the drawing that shows them),
`widgets` (`ModeExplorer` and `Predict`, for a notebook), `export` (every figure at slide size,
with its caption file).
"""
