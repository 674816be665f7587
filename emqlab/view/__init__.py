"""Drawings paired with their words, and driven.

`figures` (each course figure: a scenario's runs, its words and the drawing that shows them),
`widgets` (`ModeExplorer` and `Predict`, for a notebook), `picture` (a figure as a saved cell holds it,
its PNG and its words), `export` (every figure at slide size, with its caption file).
"""
