"""Where a running server's idle CPU time goes: what each of its threads was waiting on while
a core had nothing to run (docs/performance.md, ninth round).

Records the scheduler's switches (`perf sched record -g`, Debian's linux-perf; run as root) for
a few seconds while something else loads the server, then, for every stretch of time a core
was idle, notes the state of each thread of the server's processes — running, or blocked and
where (epoll, futex, fdatasync, flock, preempted) — and prints the commonest combinations with
their share of the idle time, and each thread's share of the CPU.

    .venv/bin/python bench/sched_idle.py --pid <tenure serve's pid> --seconds 2
    # while, from another shell: wrk -t2 -c64 -d20s -s <script> http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import tempfile
from pathlib import Path

SWITCH = re.compile(
    r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=.* prev_pid=(\d+) .*"
    r"prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)"
)
WAITS = [  # a blocked thread's kernel stack → what it waited on (first match wins)
    ("fdatasync", "fdatasync"),
    ("ext4_sync", "fdatasync"),
    ("locks_lock", "flock"),
    ("futex", "futex"),
    ("epoll", "epoll"),
    ("io_schedule", "io"),
    ("nanosleep", "sleep"),
]
Switch = tuple[int, float, int, str, int, list[str]]


def threads(pid: int) -> dict[int, str]:
    """Every thread of ``pid`` and its children: ``w<n>.loop`` for a worker's main thread,
    ``w<n>.t<k>`` for its others (in order of creation), ``parent`` for the parent's."""
    named = {int(t.name): "parent" for t in Path(f"/proc/{pid}/task").iterdir()}
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for n, child in enumerate(sorted(map(int, children)), 1):
        tids = sorted(int(t.name) for t in Path(f"/proc/{child}/task").iterdir())
        for k, tid in enumerate(tids):
            named[tid] = f"w{n}.loop" if tid == child else f"w{n}.t{k}"
    return named


def record(seconds: float) -> list[Switch]:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "sched.data"
        command = ["perf", "sched", "record", "-g", "-o", str(data), "--", "sleep", str(seconds)]
        subprocess.run(command, check=True, capture_output=True)
        fields = "time,cpu,event,trace,ip,sym"
        script = ["perf", "script", "-i", str(data), "-F", fields]
        text = subprocess.run(script, check=True, capture_output=True, text=True).stdout
    return parse(text)


def parse(text: str) -> list[Switch]:
    """The switches, each with the kernel stack of the thread switched out."""
    switches: list[Switch] = []
    stack: list[str] | None = None
    for line in text.splitlines():
        found = SWITCH.search(line)
        if found:
            stack = []
            cpu, when, prev, state, after = found.groups()
            switches.append((int(cpu), float(when), int(prev), state, int(after), stack))
        elif line.startswith("["):
            stack = None
        elif stack is not None and line.strip():
            stack.append(line.split()[-1])
    return switches


def waited_on(stack: list[str], state: str) -> str:
    if state.startswith("R"):
        return "preempted"
    frames = " ".join(stack[:14])
    return next((label for key, label in WAITS if key in frames), f"{state}:other")


def analyse(switches: list[Switch], named: dict[int, str]) -> None:
    status: dict[int, str] = {}
    running: dict[int, int] = {}
    idle: dict[tuple[str, ...], float] = collections.defaultdict(float)
    busy: dict[int, float] = collections.defaultdict(float)
    last = switches[0][1]
    cpus = {cpu for cpu, *_ in switches}
    for cpu, when, prev, state, after, stack in switches:
        spent = when - last
        empty = sum(1 for c in cpus if running.get(c, 0) == 0)
        if empty:
            idle[tuple(f"{named[t]}:{status.get(t, '?')}" for t in sorted(named))] += spent * empty
        for c in cpus:
            busy[running.get(c, 0)] += spent
        last = when
        if prev in named:
            status[prev] = waited_on(stack, state)
        if after in named:
            status[after] = "run"
        running[cpu] = after
    span = switches[-1][1] - switches[0][1]
    total = sum(idle.values())
    print(f"{span:.2f} s on {len(cpus)} cores: idle {100 * total / (span * len(cpus)):.1f}%")
    print("while a core was idle (share of the idle time; the server's threads):")
    for key, spent in sorted(idle.items(), key=lambda item: -item[1])[:12]:
        print(f"  {100 * spent / total:5.1f}%  " + "  ".join(key))
    print("each thread's share of the CPU:")
    for tid, name in sorted(named.items(), key=lambda item: -busy[item[0]]):
        if busy[tid]:
            print(f"  {name:10s} {100 * busy[tid] / (span * len(cpus)):5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pid", type=int, required=True, help="the `tenure serve` parent")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    named = threads(args.pid)
    analyse(record(args.seconds), named)


if __name__ == "__main__":
    main()
