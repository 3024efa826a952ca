"""Checks memory over time in devprof's .xplane.pb with xprof's OWN
memory_profile converter (the tool TensorBoard's profile plugin shows as
"memory_profile").

With DEVPROF_CONFORMANCE_DIR set, Go tests write <name>.xplane.pb and
<name>.memprof.json (conformance.ExportMemoryProfile): what the session's
memory tracker recorded, as the tool must show it: the memory ids, and per
id the number of allocations and deallocations, the peak heap with its time
and step, the capacity, the lifetime peak, the heap after the last event
and the breakdown of what held memory at the peak. The same converter run
on a real JAX profile (TSL's BFC allocator events) must show its allocator
with a positive peak: devprof's events are read the way TSL's are. These
tests FAIL, never skip, when their inputs are missing.

Needs xprof==2.24.2.
"""

import glob
import json
import os

import pytest

import xprof_tools as xt

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "DEVPROF_CONFORMANCE_DIR"
TOOL = "memory_profile"
JAX_PROFILE = os.path.join(HERE, "..", "testdata", "real-gpu", "jax-h100-train.xplane.pb")
# Names whose <name>.memprof.json the Go tests must write.
REQUIRED = ["devmem"]
# The tool keeps at most this many timeline points (max_num_snapshots);
# below it, its sampled timeline holds every event.
MAX_SNAPSHOTS = 1000


def manifests():
    d = os.environ.get(ENV, "")
    return sorted(glob.glob(os.path.join(d, "*.memprof.json"))) if d and os.path.isdir(d) else []


def _load(path):
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    return m, os.path.join(os.path.dirname(path), m["xplane"])


def memory_profile(path):
    """xprof's memory_profile of an .xplane.pb, parsed (one host)."""
    return xt.run_tool(path, TOOL)


def summary(alloc):
    """What the tool shows of one memory id, in the manifest's terms."""
    timeline = sorted(alloc.get("sampledTimelineSnapshots", []), key=lambda s: int(s["timeOffsetPs"]))
    kinds = [s["activityMetadata"]["memoryActivity"] for s in timeline]
    ps = alloc["profileSummary"]
    snaps = alloc.get("memoryProfileSnapshots", [])
    special = alloc.get("specialAllocations", [])
    rows, steps = [], set()
    for a in alloc.get("activeAllocations", []):
        si, sp = int(a["snapshotIndex"]), int(a["specialIndex"])
        md = snaps[si]["activityMetadata"] if si >= 0 else special[sp]
        steps.add(int(md.get("stepId", 0)))
        rows.append({"bytes": int(md["allocationBytes"]), "op": md.get("tfOpName", ""),
                     "region": md.get("regionType", ""), "count": int(a["numOccurrences"]),
                     "special": si < 0})
    return {
        "events": len(timeline),
        "allocations": kinds.count("ALLOCATION"),
        "deallocations": kinds.count("DEALLOCATION"),
        "peak_bytes": int(ps["peakStats"]["heapAllocatedBytes"]),
        "peak_time_ps": int(ps.get("peakStatsTimePs", 0)),
        "capacity_bytes": int(ps.get("memoryCapacity", 0)),
        "lifetime_peak_bytes": int(ps.get("peakBytesUsageLifetime", 0)),
        "last_bytes": int(timeline[-1]["aggregationStats"]["heapAllocatedBytes"]) if timeline else None,
        "breakdown": rows,
        "breakdown_steps": steps,
    }


def test_required_memory_manifests_present():
    d = os.environ.get(ENV, "")
    assert d and os.path.isdir(d), f"{ENV} must name the Go tests' output directory (run scripts/test)"
    have = {os.path.basename(m)[: -len(".memprof.json")] for m in manifests()}
    missing = [n for n in REQUIRED if n not in have]
    assert not missing, f"no memory_profile manifest for {missing} in {d}"


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: os.path.basename(p))
def test_memory_profile_matches_the_recording(manifest):
    m, xplane = _load(manifest)
    got = memory_profile(xplane)
    assert got.get("memoryIds", []) == m["memory_ids"], f"memory ids {got.get('memoryIds')}, want {m['memory_ids']}"
    per = got.get("memoryProfilePerAllocator", {})
    problems = []
    for mid, want in m["allocators"].items():
        s = summary(per[mid])
        assert s["events"] < MAX_SNAPSHOTS, "too many events for the sampled timeline to hold them all"
        for k in ("allocations", "deallocations", "peak_bytes", "peak_time_ps", "capacity_bytes",
                  "lifetime_peak_bytes", "last_bytes"):
            if s[k] != want[k]:
                problems.append(f"{mid}: {k} = {s[k]}, want {want[k]}")
        wrows = [{"bytes": r["bytes"], "op": r["op"], "region": r["region"], "count": r["count"],
                  "special": r.get("special", False)} for r in want["breakdown"]]
        if s["breakdown"] != wrows:
            problems.append(f"{mid}: breakdown at the peak\n  {s['breakdown']}\nwant\n  {wrows}")
        if s["breakdown"] and s["breakdown_steps"] != {want["peak_step"]}:
            problems.append(f"{mid}: breakdown in steps {s['breakdown_steps']}, want the peak's step {want['peak_step']}")
    assert not problems, "\n".join(problems)


def test_memory_profile_of_jax():
    """TSL's own MemoryAllocation events, read by the same converter."""
    got = memory_profile(JAX_PROFILE)
    assert got.get("memoryIds") == ["GPU_0_bfc"], got.get("memoryIds")
    s = summary(got["memoryProfilePerAllocator"]["GPU_0_bfc"])
    assert s["peak_bytes"] > 0 and s["lifetime_peak_bytes"] >= s["peak_bytes"], s
    assert s["allocations"] > 0 and s["deallocations"] > 0, s


H200 = os.path.join(HERE, "..", "testdata", "real-gpu", "h200")


def test_real_h200_leak_run_memory_timeline():
    """devprof's own trace of the H200 leak run (internal/gpucheck -leak:
    4 x 32 MiB of weights held, a 128 MiB activation made and freed in each
    of 12 steps, a 4 MiB cache block leaked in each): xprof shows the GPU's
    allocator with the run's true peak, in the last step, and its
    capacity is the device's memory as the CUDA driver reports it."""
    got = memory_profile(os.path.join(H200, "leak.xplane.pb"))
    assert got.get("memoryIds") == ["GPU_0_devmem"], got.get("memoryIds")
    alloc = got["memoryProfilePerAllocator"]["GPU_0_devmem"]
    s = summary(alloc)
    mib = 1 << 20
    assert s["peak_bytes"] == 4 * 32 * mib + 128 * mib + 12 * 4 * mib, s
    assert s["allocations"] == 4 + 2 * 12 and s["deallocations"] == 12, s
    with open(os.path.join(H200, "device-facts.json"), encoding="utf-8") as f:
        facts = json.load(f)
    assert int(alloc["profileSummary"]["memoryCapacity"]) == facts["total_memory"], alloc["profileSummary"]
