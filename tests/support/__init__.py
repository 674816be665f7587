"""What the tests share (nothing here is a test; a test file imports from these modules, never from another
test file), one idea a module; import from the module itself (`from support.processes import start`):

- `support.records`: a scenario's records and small helpers over its runs: a Params or Verdict holding only what
  a words test names (`record`), a renewal plane's holders stopped by a theft (`stop_when_lost`), how late a
  loaded machine may be (`REAL_SLACK_S`, `SLOW_SCALE`, `slack`), a lease read on the server's clock;
- `support.processes`: OS processes and the CLI: `emqlab` run as a process against a live server, its keys,
  its descendants, polls with deadlines (`start`, `run_json`, `wait_for`, `keys_under`, `gone`, …), and a
  lesson's kernel started again when a port it was given was taken first (notebooks/conftest.py);
- `support.words`: what a figure and its words promise (`check_protocol`, `clauses`, the reaper's and the
  queue heartbeat's readout checks) and a library's recorded runs, each verdict read again off its events;
- `support.layers`: the package read as text, its layers and its imports (`modules`, `imports`, `rank`, `upward`, …);
- `support.browser`: the browser tests' servers and page helpers (their fixtures are in tests/browser/conftest.py).
"""
