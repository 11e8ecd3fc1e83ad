"""Two tenure servers taking turns on one grown ledger: this checkout against another, or
against itself with some ``TENURE_*`` variables set. Not a test: prints each run as
``bench/vs_etcd.py`` does, tenure alone, for changes too small for the noise between an etcd
round and a tenure one. Each server starts on ``--keep``'s folder (a ledger ``vs_etcd.py --keep``
grew), is driven ``--warm`` seconds unmeasured, then measured; which runs first alternates by
pair, and the end prints both sides' medians and the other's rate over this one's by pair.
``--against`` is another checkout's root (``git worktree add /tmp/before REV``, this one's
``ledger/_native*.so`` copied in); ``--env NAME=VALUE`` sets a variable for the other instead.

    .venv/bin/python bench/steady_ab.py --keep DIR --against /tmp/before [--rounds 3]
    .venv/bin/python bench/steady_ab.py --keep DIR --env TENURE_SWEEP_INTERVAL=0.02
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vs_etcd
from steady import read_through
from vs_etcd import Figures, missing_tools, show, tenure, wrk, wrk_options
from wrk_lua import LUA_TENURE


def one_run(name: str, root: Path, env: dict[str, str], args: argparse.Namespace) -> Figures:
    """A server of the checkout at ``root`` with ``env`` added, warmed, then measured."""
    vs_etcd.ROOT, saved = root, {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with tenure(args.keep, []) as (url, key, pid):
            load = {"KEY": key, "TTL": str(args.ttl)}
            warm = argparse.Namespace(**{**vars(args), "duration": args.warm})
            wrk("warm", url, LUA_TENURE, warm, load, pid, lock=True)
            figures = wrk(name, url, LUA_TENURE, args, load, pid, lock=True)
            show(figures)
            return figures
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split(". Not a test")[0])
    parser.add_argument("--keep", type=Path, required=True, help="a grown ledger's folder")
    parser.add_argument("--against", type=Path, help="another checkout's root")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the other")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=8, help="unmeasured seconds first")
    wrk_options(parser, duration=12)
    args = parser.parse_args()
    if args.against is None and not args.env:
        parser.error("give --against CHECKOUT or --env NAME=VALUE (what to compare with)")
    if any("=" not in pair for pair in args.env):
        parser.error("--env takes NAME=VALUE")
    if missing := missing_tools(("wrk",)):
        print("missing: " + ", ".join(missing), file=sys.stderr)
        return 2
    args.keep = args.keep.resolve()
    other_env = dict(pair.split("=", 1) for pair in args.env)
    other_root = (args.against or vs_etcd.ROOT).resolve()
    here = vs_etcd.ROOT
    if not list((other_root / "ledger").glob("_native*.so")) and list(
        here.glob("ledger/_native*.so")
    ):
        print(
            f"{other_root} has no built ledger/_native*.so (its answers would be written in"
            f" Python): cp {here}/ledger/_native*.so {other_root}/ledger/",
            file=sys.stderr,
        )
        return 2
    print(f"read into the page cache: {read_through(args.keep / 'tenure-data'):,} MB", flush=True)
    pairs: list[tuple[Figures, Figures]] = []
    for n in range(args.rounds):
        runs = [("this", here, {}), ("other", other_root, other_env)]
        if n % 2:  # the first server of a pair alternates: no order effect
            runs.reverse()
        done = {name: one_run(name, root, env, args) for name, root, env in runs}
        pairs.append((done["this"], done["other"]))
    print(summary(pairs))
    return 0


def summary(pairs: list[tuple[Figures, Figures]]) -> str:
    """Each side's medians, and how the other did against this pair by pair."""
    ratios = [other.rate / this.rate for this, other in pairs]
    faster = sum(ratio > 1 for ratio in ratios)
    lines = [
        f"{name:<7} median {median(f.rate for f in side):,.0f} req/s, p99 "
        f"{median(f.p99_ms for f in side):.1f} ms, server CPU {median(f.cpu_us for f in side):,.0f}"
        " µs/request"
        for name, side in (("this", [p[0] for p in pairs]), ("other", [p[1] for p in pairs]))
    ]
    lines.append(
        f"other/this by pair: {', '.join(f'{r:.2f}' for r in ratios)}; median"
        f" {median(ratios):.2f}, other faster in {faster} of {len(pairs)}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
