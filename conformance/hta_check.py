#!/usr/bin/env python3
"""Run Holistic Trace Analysis (HTA) on a Kineto trace and print what it finds.

Usage: hta_check.py TRACE.json[.gz]

HTA reads a directory of per-rank traces: the trace is copied into a
temporary one as rank-0.json.gz, with the distributedInfo rank HTA looks
for added when the trace has none. Prints one JSON object on stdout:

  {"temporal": {"idle_us", "compute_us", "non_compute_us", "kernel_time_us"},
   "idle": [{"stream", "category", "idle_us"}, ...]}

for rank 0: HTA's get_temporal_breakdown and get_idle_time_breakdown (with
its default consecutive_kernel_delay), in HTA's units (the trace's
microseconds). analysis's TestHTAAgrees compares devprof analyze with it.

HTA rounds a trace's sub-microsecond timestamps to whole microseconds by
default (starts up, ends down), which on the Kineto fixture's 1-2 us
kernels moves about 1 ms from compute to idle; devprof keeps nanoseconds,
so this runs HTA with its own switch for keeping them,
HTA_DISABLE_NS_ROUNDING=1.
"""

import gzip
import json
import logging
import os
import sys
import tempfile


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    trace = load(argv[1])
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    info = trace.setdefault("distributedInfo", {})
    info.setdefault("rank", 0)
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    logging.disable(logging.WARNING)  # HTA logs every step of its parse
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:
        with gzip.open(os.path.join(d, "rank-0.json.gz"), "wt") as f:
            json.dump(trace, f)
        analysis = TraceAnalysis(trace_dir=d)
        temporal = analysis.get_temporal_breakdown(visualize=False)
        idle, _ = analysis.get_idle_time_breakdown(visualize=False)
    row = temporal[temporal["rank"] == 0].iloc[0]
    out = {
        "temporal": {
            "idle_us": float(row["idle_time(us)"]),
            "compute_us": float(row["compute_time(us)"]),
            "non_compute_us": float(row["non_compute_time(us)"]),
            "kernel_time_us": float(row["kernel_time(us)"]),
        },
        "idle": [
            {"stream": int(r["stream"]), "category": str(r["idle_category"]), "idle_us": float(r["idle_time"])}
            for _, r in idle.iterrows()
        ],
    }
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
