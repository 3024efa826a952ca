"""Checks the xprof harness (xprof_tools) against a real JAX recording.

A tiny jitted matmul loop is recorded with ``jax.profiler.trace`` on CPU at
test time, with ``StepTraceAnnotation("train", step_num=i)`` around each step
and ``TraceAnnotation("fwd", batch=32)`` inside; then xprof's own converters
must count the steps, show the annotation with its argument and discover the
run under ``plugins/profile``. jax and xprof are required: without them these
tests FAIL (they do not skip).

Needs: xprof==2.24.2, and jax[cpu]==0.12.0.1 (Python >= 3.12) or
jax[cpu]==0.10.2 (Python 3.11).
"""

from __future__ import annotations

import glob
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import xprof_tools as xt  # noqa: E402

try:
    import jax
    import jax.numpy as jnp

    _JAX_ERROR = None
except Exception as e:  # pylint: disable=broad-except
    jax = jnp = None
    _JAX_ERROR = e

try:
    import xprof  # noqa: F401

    _XPROF_ERROR = None
except Exception as e:  # pylint: disable=broad-except
    _XPROF_ERROR = e

N_STEPS = 5
BATCH = 32


def _require(need_jax=True):
    if need_jax and _JAX_ERROR is not None:
        pytest.fail(
            "jax is not importable (%r). The xprof conformance tests record a "
            "real JAX profile: pip install 'jax[cpu]==0.12.0.1' (Python >= "
            "3.12) or 'jax[cpu]==0.10.2' (Python 3.11)." % (_JAX_ERROR,),
            pytrace=False,
        )
    if _XPROF_ERROR is not None:
        pytest.fail(
            "xprof is not importable (%r): pip install xprof==%s"
            % (_XPROF_ERROR, xt.XPROF_VERSION),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def jax_profile(tmp_path_factory):
    """Records the JAX program; returns (logdir, run, xplane_path)."""
    _require()
    logdir = str(tmp_path_factory.mktemp("jax_logdir"))

    @jax.jit
    def f(a, b):
        return jnp.tanh(a @ b) * 0.5

    a = jnp.ones((64, 64), jnp.float32)
    b = jnp.ones((64, 64), jnp.float32)
    f(a, b).block_until_ready()  # compile outside the trace
    with jax.profiler.trace(logdir):
        for i in range(N_STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with jax.profiler.TraceAnnotation("fwd", batch=BATCH):
                    a = f(a, b)
                a.block_until_ready()
    paths = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    assert len(paths) == 1, "expected one .xplane.pb under %s, got %r" % (logdir, paths)
    run = os.path.basename(os.path.dirname(paths[0]))
    return logdir, run, paths[0]


def test_xprof_version_is_the_pinned_one():
    _require(need_jax=False)
    assert xt.xprof_version() == xt.XPROF_VERSION


def test_run_is_discovered_under_plugins_profile(jax_profile):
    logdir, run, path = jax_profile
    assert xt.discover_runs(logdir) == [run]
    host = os.path.basename(path)[: -len(".xplane.pb")]
    assert xt.run_hosts(logdir, run) == [host]
    tools = xt.run_tools(logdir, run)
    assert "trace_viewer@" in tools and "overview_page" in tools, tools
    assert "trace_viewer@" in xt.tool_names(path)


def test_nested_tensorboard_run_is_discovered(jax_profile, tmp_path):
    _, run, path = jax_profile
    nested = tmp_path / "train" / "plugins" / "profile" / run
    nested.mkdir(parents=True)
    (nested / os.path.basename(path)).write_bytes(open(path, "rb").read())
    assert xt.discover_runs(str(tmp_path)) == ["train/" + run]


def test_overview_page_counts_the_step_annotations(jax_profile):
    _, _, path = jax_profile
    ov = xt.overview(path)
    assert not ov["no_step_marker"], ov["diagnostics"]
    assert ov["step_count"] == N_STEPS
    assert [s["name"] for s in ov["steps"]] == ["train %d" % i for i in range(N_STEPS)]
    assert ov["avg_step_time_ms"] > 0
    assert ov["reported_avg_step_time_ms"] is not None
    assert ov["hardware_type"] == "CPU_ONLY"

    # Step time is the duration of the StepTraceAnnotation span.
    spans = {e["name"]: e for e in xt.trace_viewer_events(path)
             if e["name"].startswith("train ")}
    for s in ov["steps"]:
        assert s["step_time_ms"] == pytest.approx(spans[s["name"]]["dur_us"] / 1000.0,
                                                  abs=1e-6)


def test_trace_viewer_shows_fwd_with_its_arg(jax_profile):
    _, _, path = jax_profile
    events = xt.trace_viewer_events(path)
    fwd = [e for e in events if e["name"] == "fwd"]
    assert len(fwd) == N_STEPS
    for e in fwd:
        assert e["args"].get("batch") == BATCH, e
        assert e["process_name"] == "/host:CPU"
        assert e["pid"] == 701
        assert e["thread_name"]
        assert e["dur_us"] > 0 and e["ph"] == "X"

    steps = [e for e in events if e["name"].startswith("train ")]
    assert [e["args"].get("step_num") for e in steps] == list(range(N_STEPS))
    # Each fwd nests inside its step on the same thread, in the same group.
    for st, fw in zip(steps, fwd):
        assert st["tid"] == fw["tid"]
        assert st["ts_us"] <= fw["ts_us"]
        assert fw["ts_us"] + fw["dur_us"] <= st["ts_us"] + st["dur_us"] + 1e-3
        assert fw["args"]["group_id"] == st["args"]["group_id"]


def test_streaming_trace_viewer_shows_fwd(jax_profile):
    _, _, path = jax_profile
    host = os.path.basename(path)[: -len(".xplane.pb")]
    events = xt.trace_viewer_events(path, streaming=True)
    fwd = [e for e in events if e["name"] == "fwd"]
    assert len(fwd) == N_STEPS
    for e in fwd:
        assert e["process_name"] == host + " /host:CPU"
        assert e["pid"] == 1701
    # The streaming view sends args on click only; fetch them as the UI does.
    assert xt.trace_viewer_event_details(path, fwd[0]).get("batch") == BATCH


def test_xspace_layout_of_the_jax_file(jax_profile):
    _, _, path = jax_profile
    space = xt.load_xspace(path)
    names = [p.name for p in space.planes]
    assert "/host:CPU" in names and "Task Environment" in names, names
    assert len(space.hostnames) == 1
    host = space.planes[names.index("/host:CPU")]
    fwd_stats, train_stats = [], []
    for line in host.lines:
        for ev in line.events:
            md_name = host.event_metadata[ev.metadata_id].name
            stats = {}
            for s in ev.stats:
                name, _ = xt.stat_value(host, s)
                stats[name] = (s.WhichOneof("value"), xt.stat_value(host, s)[1])
            if md_name == "fwd":
                fwd_stats.append(stats)
            elif md_name == "train":
                train_stats.append(stats)
    # TraceMe "fwd#batch=32#" is stored parsed: plain name + int64 stat.
    assert fwd_stats == [{"batch": ("int64_value", BATCH)}] * N_STEPS
    assert [t["step_num"] for t in train_stats] == [
        ("int64_value", i) for i in range(N_STEPS)]
    assert all(t["_r"] == ("int64_value", 1) for t in train_stats)
    env = space.planes[names.index("Task Environment")]
    env_stats = dict(xt.stat_value(env, s) for s in env.stats)
    assert env_stats["profile_start_time"] < env_stats["profile_stop_time"]
    assert "Task Environment" in xt.dump_xspace(path)


def test_op_and_kernel_tools_run(jax_profile):
    _, _, path = jax_profile
    assert isinstance(xt.framework_op_stats(path, include_idle=True), list)
    assert xt.kernel_stats(path) == []  # no GPU kernels on CPU
    tables = xt.run_tool(path, xt.OVERVIEW_PAGE)
    assert isinstance(tables, list) and len(tables) == 7


def _synthetic_space(events_sorted=True):
    """One /host:CPU line with 3 steps (+ fwd children) and a _counters_ line."""
    cls = xt.xspace_classes()
    space = cls["XSpace"]()
    space.hostnames.append("synth")
    plane = space.planes.add(id=0, name="/host:CPU")
    names = {}

    def ev_md(name):
        if name not in names:
            names[name] = len(names) + 1
            plane.event_metadata[names[name]].id = names[name]
            plane.event_metadata[names[name]].name = name
        return names[name]

    stat_ids = {}

    def st_md(name):
        if name not in stat_ids:
            stat_ids[name] = len(stat_ids) + 1
            plane.stat_metadata[stat_ids[name]].id = stat_ids[name]
            plane.stat_metadata[stat_ids[name]].name = name
        return stat_ids[name]

    line = plane.lines.add(id=1, name="main", timestamp_ns=1000)
    evs = []
    for i in range(3):
        t = i * 100_000_000
        evs.append(("train", t, 50_000_000, [("_r", 1), ("step_num", i)]))
        evs.append(("fwd", t, 20_000_000, [("batch", BATCH)]))
    if not events_sorted:
        evs = [evs[k ^ 1] for k in range(len(evs))]  # child before parent
    for name, off, dur, stats in evs:
        e = line.events.add(metadata_id=ev_md(name), offset_ps=off, duration_ps=dur)
        for k, v in stats:
            e.stats.add(metadata_id=st_md(k), int64_value=v)
    counters = plane.lines.add(id=2, name="_counters_", timestamp_ns=1000)
    for i in range(3):
        e = counters.events.add(metadata_id=ev_md("heap_bytes"),
                                offset_ps=i * 100_000_000)
        e.stats.add(metadata_id=st_md("value"), double_value=1000.0 * (i + 1))
    return space


def _write(space, root, host="synth"):
    run_dir = os.path.join(root, "plugins", "profile", "run")
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, host + ".xplane.pb")
    with open(path, "wb") as f:
        f.write(space.SerializeToString())
    return path


def test_harness_counters_and_event_order_rules(tmp_path):
    """What the Go writer must do, checked against xprof itself."""
    _require(need_jax=False)
    path = _write(_synthetic_space(), str(tmp_path / "ok"))
    ov = xt.overview(path)
    assert ov["step_count"] == 3 and not ov["no_step_marker"]
    assert ov["avg_step_time_ms"] == pytest.approx(0.05)
    samples = xt.trace_viewer_counters(path)
    assert [(s["name"], s["ts_us"], s["value"]) for s in samples] == [
        ("heap_bytes", 1.0, 1000), ("heap_bytes", 101.0, 2000),
        ("heap_bytes", 201.0, 3000)]
    assert all(s["stat_name"] == "value" for s in samples)

    # Children listed before their parent (same start): grouping breaks and
    # the overview page finds no step.
    bad = _write(_synthetic_space(events_sorted=False), str(tmp_path / "bad"))
    assert xt.overview(bad)["no_step_marker"]


def test_kernel_stats_of_a_real_h200_trace():
    """devprof's trace of scripts/gpu-check's workload on an NVIDIA H200
    (20 steps of one saxpy, grid 4096 of 256 threads, and one single-thread
    spin kernel; testdata/real-gpu/h200): xprof's kernel_stats lists both
    kernels by their demangled names, with their launch shapes, counts
    and a theoretical occupancy computed from the device facts devprof
    wrote (a 256-thread block of 16 registers fills an SM; a one-thread
    block cannot)."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "testdata", "real-gpu", "h200", "gpucheck.xplane.pb")
    rows = {r["kernel_name"]: r for r in xt.kernel_stats(path)}
    assert set(rows) == {"saxpy(int, float, float const*, float*)", "spin(long long)"}, rows
    saxpy, spin = rows["saxpy(int, float, float const*, float*)"], rows["spin(long long)"]
    assert (saxpy["grid_dim"], saxpy["block_dim"], saxpy["occurrences"]) == ("4096,1,1", "256,1,1", 20.0), saxpy
    assert (spin["grid_dim"], spin["block_dim"], spin["occurrences"]) == ("1,1,1", "1,1,1", 20.0), spin
    assert saxpy["occupancy_pct"] == 100.0, saxpy
    assert 0 < spin["occupancy_pct"] < 100.0, spin
    assert saxpy["op_name"] == spin["op_name"] == "workload", (saxpy, spin)
