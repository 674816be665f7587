"""What a run can suffer.

`pauses` (a stop-the-world pause of one worker's processes), `relay` (a loopback TCP relay that
delays, stalls or cuts a link), `link` (a worker's delayed link to the store, as a scenario sees it),
`replica` (a primary and its replica behind a relay: kill, promote, rejoin).
"""
