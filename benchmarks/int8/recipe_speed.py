"""The speed of candidate int8 recipes (issue 71): ``frugalzero bench nn --precision int8
--plain-int8`` with the product's recipe (``nn.quantize.MIXED``) replaced by each candidate in
turn, so every line has the candidate, every layer int8 (``PLAIN``) and bf16 timed in the
same rounds.

    .venv/bin/python benchmarks/int8/recipe_speed.py medium \\
        'stem=bf16,tower.*.conv2=alone' 'stem=bf16,tower.*.conv2=alone,policy=bf16'

A candidate is ``sensitivity.py``'s recipe syntax (NAME=MODE, comma-separated). The bench runs
inline (``--backend inline --compile on``): the replaced recipe is this process's, and the
figures are the bare net's (``net_positions_per_s``, ``over_reference`` against bf16,
``over_plain_int8``), compiled as the evaluator compiles it (AOTInductor). One JSON line a
candidate is appended to ``--out`` with the date, the load and the process's autogroup. On a
machine shared with niced background jobs, run it in an autogroup of its own at nice -19
(benchmarks/int8/README.md's notes)::

    setsid bash -c 'echo -19 > /proc/self/autogroup; exec .venv/bin/python \
        benchmarks/int8/recipe_speed.py small ...'
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

from frugalzero.bench import nn as bench
from frugalzero.nn import quantize

OUT = Path("benchmarks/results/int8/speed.jsonl")


def recipe(text: str) -> quantize.Int8Recipe:
    modules = []
    for item in filter(None, text.split(",")):
        name, _, mode = item.partition("=")
        modules.append((name, mode or "float"))
    return quantize.Int8Recipe(modules=tuple(modules), observer="minmax")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch")
    parser.add_argument("recipes", nargs="+")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for text in args.recipes:
        quantize.MIXED = recipe(text)  # what recipe_for gives a ResNet, in this process
        argv = ["--arch", args.arch, "--precision", "int8", "--plain-int8", "--device", "cpu"]
        argv += ["--backend", "inline", "--compile", "on", "--batch", str(args.batch)]
        argv += ["--rounds", str(args.rounds), "--threads", str(args.threads)]
        parsed = argparse.ArgumentParser()
        bench.add_arguments(parsed)
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        result = bench.run(parsed.parse_args(argv))
        record = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "uptime": uptime,
            "autogroup": Path("/proc/self/autogroup").read_text().strip(),
            "command": " ".join(["benchmarks/int8/recipe_speed.py", *sys.argv[1:]]),
            "recipe": text,
            "bench_nn": "frugalzero bench nn " + " ".join(argv),
            "result": result,
        }
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        print(
            f"{text or 'all int8 (minmax)':60} int8 {result['net_positions_per_s']:8.0f}/s "
            f"over bf16 {result['over_reference']:.3f} over plain int8 "
            f"{result['over_plain_int8']:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
