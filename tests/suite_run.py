"""How `./run test` runs pytest: on this host as it is, or as a host at least 2.5 times slower
(`EMQLAB_SLOW_HOST=1`), and how it ends: one line with the host's speed probe and the run's total time.

    python tests/suite_run.py [pytest arguments]        # what ./run test calls

The slow-host mode pins the suite to one core (the last of the cores this process may use, so an outer
`taskset` picks which) and starts CPU-bound loops on that same core until the speed probe, measured on
that core beside the loops, takes at least `SLOWER` times what it takes on the host as it is (two loops
make it about three times). It keeps the suite's five test processes: they now share one core with the
loops, which is harsher on wake-ups than a 2-core host 2.5 times slower would be. The loops end with the
run, and by themselves if this process dies. `EMQLAB_SLOW_HOST` unset, empty or 0: the host as it is.

The probe the tests size their margins from (tests/realtime.py) is the one measured inside the mode.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import realtime

SLOW_ENV = "EMQLAB_SLOW_HOST"
SLOWER = 2.5  # the slow-host mode's probe is at least this many times the host's own
MAX_LOOPS = 8
LOOP = ("import os, sys\nparent = int(sys.argv[1])\n"
        "while os.getppid() == parent:\n    for _ in range(1_000_000): pass\n")


def slow_mode() -> bool:
    return os.environ.get(SLOW_ENV, "").strip() not in ("", "0")


def slow_down() -> tuple[list[subprocess.Popen], str]:
    """Pin this process (and so every process it starts) to one core and start loops beside it there until
    the probe is `SLOWER` times the host's own; the loops, and a line saying what was done."""
    own = realtime.speed_probe()
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    loops: list[subprocess.Popen] = []
    probe = realtime.speed_probe()
    while probe < SLOWER * own and len(loops) < MAX_LOOPS:
        loops.append(subprocess.Popen([sys.executable, "-c", LOOP, str(os.getpid())], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))  # Ctrl-C is pytest's
        time.sleep(0.2)
        probe = realtime.speed_probe()
    os.environ[realtime.PROBE_ENV] = f"{probe:.4f}"
    said = (f"slow-host mode: pinned to core {core} with {len(loops)} CPU-bound loop(s) beside the suite; "
            f"speed probe {probe:.2f} s there, {probe / own:.1f} times the host's {own:.2f} s")
    return loops, said


def main(args: list[str]) -> int:
    started = float(os.environ.get("EMQLAB_TEST_STARTED") or time.time())  # ./run test's own start
    loops: list[subprocess.Popen] = []
    said = ""
    if slow_mode():
        loops, said = slow_down()
        print(f"emqlab: {said}", flush=True)
    else:
        os.environ[realtime.PROBE_ENV] = f"{realtime.speed_probe():.4f}"
    probe = float(os.environ[realtime.PROBE_ENV])
    pytest = subprocess.Popen([sys.executable, "-m", "pytest", *args])
    # Ctrl-C reaches pytest through the terminal's process group; a TERM or HUP sent to us is passed on
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: pytest.send_signal(signum))
    while True:
        try:
            code = pytest.wait()
            break
        except KeyboardInterrupt:
            continue  # pytest has it too, and ends by itself
    for loop in loops:
        loop.kill()
        loop.wait()
    took = time.time() - started
    mode = "slow-host mode" if loops else "this host as it is"
    print(f"emqlab: ./run test took {int(took // 60)}:{int(took % 60):02d} ({took:.0f} s) with exit {code}; "
          f"speed probe {probe:.2f} s ({mode}; ten million turns of an empty loop, lower is faster)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
