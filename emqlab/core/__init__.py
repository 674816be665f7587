"""The ground floor: what every layer shares and nothing else needs.

`errors` (the one exception family), `ranges` (every number emqlab takes, with its range),
`timeline` (what happened in a run, as plain data, JSON in and out), `words` (the time formatter
and the object a figure's words travel in), `measured` (the benchmark's tables, shipped as data).
Nothing here talks to a store, draws, or imports redis.
"""
