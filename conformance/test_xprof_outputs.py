"""Checks devprof's .xplane.pb files with xprof's OWN converters.

With DEVPROF_CONFORMANCE_DIR set, Go tests write <name>.xplane.pb and
<name>.xprof.json (internal/conformance.ExportXPlane): what the session
recorded, as xprof should show it. Each file is converted by xprof 2.24's
trace_viewer, overview_page and streaming trace viewer (counters), and every
recorded span must appear with its name, row, start and duration (to the
nanosecond, well within the microsecond asked for) and its arguments; the
overview page must count every step with its step time. The demo's log
directory (DEVPROF_DEMO_LOGDIR) must be discovered as a run by xprof's
profile plugin. These tests FAIL, never skip, when their inputs are missing.
"""

import glob
import json
import math
import os
import shutil
from collections import Counter

import pytest

import xprof_tools as xt

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "DEVPROF_CONFORMANCE_DIR"
TOL_US = 0.0015  # xprof prints µs with ns precision


def required():
    with open(os.path.join(HERE, "required_xprof.txt"), encoding="utf-8") as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def manifests():
    d = os.environ.get(ENV, "")
    return sorted(glob.glob(os.path.join(d, "*.xprof.json"))) if d and os.path.isdir(d) else []


def test_required_xprof_manifests_present():
    d = os.environ.get(ENV, "")
    assert d and os.path.isdir(d), f"{ENV} must name the Go tests' output directory (run scripts/test)"
    have = {os.path.basename(m)[: -len(".xprof.json")] for m in manifests()}
    missing = [n for n in required() if n not in have]
    assert not missing, f"no xprof manifest for {missing} in {d}"


def _close(a, b):
    if isinstance(b, float) or isinstance(a, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return a == b


def xprof_counted_steps(steps):
    """The steps xprof's overview page counts: with more than five steps it
    drops the first and the last as possibly incomplete (measured on xprof
    2.24.2: 3, 4, 5 steps are all counted; 6 give 4, 10 give 8, 20 give 18)."""
    return steps[1:-1] if len(steps) > 5 else steps


def _load(path):
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    return m, os.path.join(os.path.dirname(path), m["xplane"])


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_trace_viewer_shows_every_event(manifest):
    m, xplane = _load(manifest)
    # xprof derives lines of its own on device planes (Steps, XLA Ops,
    # Framework Ops ...); only the lines devprof wrote are compared.
    threads = {(e["process"], e["thread"]) for e in m["events"]}
    got = [e for e in xt.trace_viewer_events(xplane)
           if (e["process_name"] == "/host:CPU" and e["thread_name"] != "_counters_")
           or (e["process_name"], e["thread_name"]) in threads]
    assert got or not m["events"], "xprof's trace viewer shows no events"
    pool = {}
    for e in got:
        pool.setdefault((e["process_name"], e["name"], e["thread_name"]), []).append(e)
    problems = []
    for want in m["events"]:
        cands = pool.get((want["process"], want["name"], want["thread"]), [])
        hit = None
        for i, e in enumerate(cands):
            if abs(e["ts_us"] - want["ts_us"]) <= TOL_US and abs((e["dur_us"] or 0) - want["dur_us"]) <= TOL_US:
                hit = cands.pop(i)
                break
        if hit is None:
            problems.append(f"missing {want['name']!r} on {want['thread']!r} at {want['ts_us']}us for {want['dur_us']}us"
                            f" (candidates: {[(c['ts_us'], c['dur_us']) for c in cands][:3]})")
            continue
        for k, v in want["args"].items():
            if k not in hit["args"] or not _close(hit["args"][k], v):
                problems.append(f"{want['name']!r}: arg {k}={hit['args'].get(k)!r}, want {v!r}")
    extra = [(k, len(v)) for k, v in pool.items() if v]
    assert not problems, "\n".join(problems[:20])
    assert not extra, f"events xprof shows that were not recorded: {extra[:10]}"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_overview_reports_steps(manifest):
    m, xplane = _load(manifest)
    ov = xt.overview(xplane)
    want = xprof_counted_steps(m["steps"])
    if not m["steps"]:
        assert ov["no_step_marker"], "overview found steps in a trace that recorded none"
        return
    assert ov["step_count"] == len(want), f"overview counts {ov['step_count']} steps, recorded {len(want)}"
    if m["kernels"]:
        # With GPU planes xprof names a step by its number and times it by
        # the device activity its launches caused.
        got = Counter((s["name"].split()[-1], round(s["step_time_ms"] * 1e3, 3)) for s in ov["steps"])
        exp = Counter((s["name"].split()[-1], round(s["device_us"], 3)) for s in want)
    else:
        got = Counter((s["name"], round(s["step_time_ms"] * 1e3, 3)) for s in ov["steps"])
        exp = Counter((s["name"], round(s["dur_us"], 3)) for s in want)
    assert got == exp, f"step names/times differ: xprof {sorted(got)[:5]} vs recorded {sorted(exp)[:5]}"
    assert ov["avg_step_time_ms"] > 0
    if m.get("device_type"):
        assert ov["device_type"] == m["device_type"], f"overview device type {ov['device_type']!r}, want {m['device_type']!r}"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_counters_are_counter_tracks(manifest):
    m, xplane = _load(manifest)
    got = {}
    for s in xt.trace_viewer_counters(xplane):
        got.setdefault(s["name"], []).append((s["ts_us"], s["value"]))
    for c in m["counters"]:
        samples = sorted(got.get(c["name"], []))
        want = sorted((ts, v) for ts, v in c["samples"])
        assert len(samples) == len(want), f"counter {c['name']!r}: {len(samples)} samples, want {len(want)}"
        for (ts, v), (wts, wv) in zip(samples, want):
            assert abs(ts - wts) <= TOL_US and _close(v, wv), f"counter {c['name']!r}: ({ts}, {v}) != ({wts}, {wv})"
    assert set(got) == {c["name"] for c in m["counters"]}, f"counter tracks {sorted(got)} != recorded"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_kernel_stats_lists_kernels(manifest):
    m, xplane = _load(manifest)
    rows = xt.kernel_stats(xplane)
    got = Counter()
    for r in rows:
        got[r["kernel_name"]] += int(r["occurrences"])
    assert dict(got) == m["kernels"], f"kernel_stats shows {dict(got)}, recorded {m['kernels']}"
    if m.get("occupancy"):
        # The device planes carry SMs, clock and compute capability (NVML's
        # facts): xprof computes a theoretical occupancy for every kernel.
        zero = [r["kernel_name"] for r in rows if not float(r["occupancy_pct"]) > 0]
        assert rows and not zero, f"kernel_stats shows no theoretical occupancy for {zero}"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_launch_flows(manifest):
    """Each launch -> kernel/copy link is a flow in the UI's trace viewer:
    the host event flows out, the device event flows in, same bind_id."""
    m, xplane = _load(manifest)
    trace = xt.run_tool(xplane, xt.TRACE_VIEWER_STREAMING, {"resolution": "0"})
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e and e.get("ph") == "M" and e.get("name") == "process_name"}
    out, into = Counter(), Counter()
    for e in trace["traceEvents"]:
        if not e or "bind_id" not in e or e.get("cat") != "gpu_launch":
            continue
        if e.get("flow_out") and "/host:CPU" in procs.get(e["pid"], ""):
            out[e["bind_id"]] += 1
        if e.get("flow_in") and "/device:GPU" in procs.get(e["pid"], ""):
            into[e["bind_id"]] += 1
    assert sum(into.values()) == m["launch_links"], f"{sum(into.values())} device events with a launch flow, want {m['launch_links']}"
    assert set(into) == set(out), "flows whose host and device ends do not match"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_host_flows(manifest):
    """Flows between host events (written as xprof's flow stat) are arrows
    in the UI's trace viewer with both ends: the same bind_id on each end,
    flow_out on the first and flow_in on the last, in the recorded order,
    and none of them a launch (category gpu_launch, which test_launch_flows
    counts)."""
    m, xplane = _load(manifest)
    trace = xt.run_tool(xplane, xt.TRACE_VIEWER_STREAMING, {"resolution": "0"})
    ends = {}
    for e in trace["traceEvents"]:
        if e and e.get("ph") == "X" and "bind_id" in e and e.get("cat") != "gpu_launch":
            ends.setdefault(e["bind_id"], []).append(e)
    got = Counter()
    problems = []
    for bind_id, es in ends.items():
        if len(es) < 2:
            continue  # an end whose other ends show other flows (one flow per event)
        es.sort(key=lambda e: e["ts"])
        if not es[0].get("flow_out") or not es[-1].get("flow_in"):
            problems.append(f"flow {bind_id}: first end {es[0]['name']!r} flow_out={es[0].get('flow_out')}, "
                            f"last end {es[-1]['name']!r} flow_in={es[-1].get('flow_in')}")
        for a, b in zip(es, es[1:]):
            got[(a["name"], b["name"])] += 1
    want = Counter(tuple(p) for p in m["host_flows"])
    assert not problems, "\n".join(problems[:10])
    assert got == want, f"xprof draws host flows {sorted(got.items())[:10]}, recorded {sorted(want.items())[:10]}"


def test_demo_run_is_discovered(tmp_path):
    src = os.environ.get("DEVPROF_DEMO_LOGDIR", "")
    assert src and os.path.isdir(src), "DEVPROF_DEMO_LOGDIR must name the demo's log directory (run scripts/test)"
    logdir = str(tmp_path / "logdir")  # xprof writes caches into run directories: use a copy
    shutil.copytree(src, logdir)
    runs = xt.discover_runs(logdir)
    assert len(runs) == 1, f"xprof finds runs {runs} under {logdir}/plugins/profile"
    hosts = xt.run_hosts(logdir, runs[0])
    xplanes = glob.glob(os.path.join(logdir, "plugins", "profile", runs[0], "*.xplane.pb"))
    assert len(xplanes) == 1
    host = os.path.basename(xplanes[0])[: -len(".xplane.pb")]
    assert host in hosts, f"xprof lists hosts {hosts}, want {host}"
    tools = xt.run_tools(logdir, runs[0])
    for tool in ("trace_viewer@", "overview_page"):
        assert tool in tools, f"xprof offers {tools} for the run"
    ov = xt.overview(xplanes[0])
    steps = int(os.environ.get("DEVPROF_DEMO_STEPS", "40"))
    assert ov["step_count"] == len(xprof_counted_steps(range(steps))) and not ov["no_step_marker"], ov["diagnostics"]
