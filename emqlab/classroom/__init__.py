"""A class on one server: one feature, its own small stack, from the bottom up.

`server` (the class queue, one ACL user per seat, the queue's operations as Valkey Functions),
`board` (the instructor's view: totals, invariants, each learner's lane, the controls), `learner`
(a learner's worker on the class queue), `draw` (the class figure and a learner's own lane),
`dashboard` (the live instructor's board and a learner's lane, as widgets), `practice` (a class on
this machine, for a learner with no instructor at hand).
"""
