"""The course: what the lessons call, and the lessons themselves.

`lab` (the notebooks' shared store and helpers), `exercises` (the recap's checks, answered by real
runs), `notebooks` (execute the lessons and save them with their outputs: `./run notebooks`),
`present` (the Voila dashboards).
"""
