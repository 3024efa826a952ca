"""A real jax.profiler.trace capture, converted by `devprof convert` into a
native Perfetto trace, must pass the Perfetto conformance checker and hold
the same host events that xprof's own trace viewer shows for the capture.

Needs DEVPROF_BIN (the devprof binary; scripts/test builds it) and jax
(conformance/requirements.txt). Missing either is a failure, not a skip.
"""

import collections
import glob
import os
import re
import subprocess

import pytest

import perfetto_check as pc
import xprof_tools as xt

STEPS = 5


def _devprof():
    b = os.environ.get("DEVPROF_BIN", "")
    assert b and os.access(b, os.X_OK), "DEVPROF_BIN must name a built devprof binary (run scripts/test)"
    return b


@pytest.fixture(scope="module")
def jax_capture(tmp_path_factory):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:  # pragma: no cover - a broken environment
        pytest.fail(f"jax is not importable ({e}); scripts/pyenv installs it from conformance/requirements.txt")
    logdir = tmp_path_factory.mktemp("jax") / "logdir"

    @jax.jit
    def step(x):
        return jnp.tanh(x @ x.T) * 0.5

    x = jnp.ones((64, 64))
    with jax.profiler.trace(str(logdir)):
        for i in range(STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with jax.profiler.TraceAnnotation("fwd", batch=32, mode="train"):
                    x = step(x)
                x.block_until_ready()
    files = glob.glob(str(logdir / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert len(files) == 1, files
    return files[0]


def _stat(xspace, plane_name, stat):
    for p in xspace.planes:
        if p.name == plane_name:
            for s in p.stats:
                if p.stat_metadata[s.metadata_id].name == stat:
                    return s.uint64_value or s.int64_value
    return None


def _base_thread(name):
    return re.sub(r" \(\d+\)$", "", name or "")


def test_jax_capture_converts_to_conformant_perfetto(jax_capture, tmp_path):
    out = tmp_path / "jax.pftrace"
    r = subprocess.run([_devprof(), "convert", jax_capture, str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = pc.check_file(str(out))
    assert res.ok, "\n".join(res.violations[:20])

    xspace = xt.load_xspace(jax_capture)
    start = _stat(xspace, "Task Environment", "profile_start_time")
    assert start, "the JAX capture has no profile_start_time"
    # xprof also synthesises events that are not in the file (for example
    # "ThreadpoolListener::Region" from StartRegion/StopRegion markers);
    # only events the file holds can be expected in a conversion.
    in_file = {md.display_name or md.name for p in xspace.planes for md in p.event_metadata.values()}

    # What xprof shows on /host:CPU: (name, thread, ts ns, dur ns); steps
    # are shown as "<name> <step_num>" there.
    want = collections.Counter()
    for e in xt.trace_viewer_events(jax_capture):
        if e["process_name"] != "/host:CPU" or e["thread_name"] == "_counters_":
            continue
        if e["name"] not in in_file and "step_name" not in e["args"]:
            continue
        want[(e["name"], e["thread_name"], round(e["ts_us"] * 1000), round((e["dur_us"] or 0) * 1000))] += 1
    assert want, "xprof shows no host events in the JAX capture"

    thread_of = {u: t.name for u, t in res.tracks.items()}
    got = collections.Counter()
    steps = 0
    fwd_args = []
    for s in list(res.spans) + list(res.instants):
        name = s.name
        if "step_num" in s.args:
            name = "%s %d" % (name, s.args["step_num"][1])
            steps += 1
        if s.name == "fwd":
            fwd_args.append({k: v[1] for k, v in s.args.items()})
        got[(name, _base_thread(thread_of.get(s.track)), s.ts - start, s.dur or 0)] += 1

    missing = want - got
    extra = got - want
    assert not missing, f"{sum(missing.values())} xprof events not in the Perfetto trace, e.g. {list(missing)[:5]}"
    assert not extra, f"{sum(extra.values())} Perfetto slices xprof does not show, e.g. {list(extra)[:5]}"
    assert steps == STEPS, f"{steps} steps carried over, recorded {STEPS}"
    assert len(fwd_args) == STEPS and all(a.get("batch") == 32 and a.get("mode") == "train" for a in fwd_args), fwd_args


def test_jax_capture_summary(jax_capture):
    r = subprocess.run([_devprof(), "summary", jax_capture], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "fwd" in r.stdout and "train" in r.stdout, r.stdout
