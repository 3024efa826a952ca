"""Checks devprof's real outputs, written by the Go tests.

With DEVPROF_CONFORMANCE_DIR set, Go tests write pairs <name>.pftrace (or
<name>.pftrace.gz) and <name>.expect.json there (internal/conformance). Each
pair is checked with perfetto_check against its manifest; a trace without a
manifest is checked for the invariants only. These tests FAIL (never skip)
when the directory is not set up, or when a name listed in required.txt has
no manifest: a conformance run that checked nothing must not look green.
"""

import glob
import json
import os

import pytest

import perfetto_check as pc

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "DEVPROF_CONFORMANCE_DIR"


def conformance_dir():
    return os.environ.get(ENV, "")


def required_names():
    with open(os.path.join(HERE, "required.txt"), encoding="utf-8") as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]


def manifests():
    d = conformance_dir()
    if not d or not os.path.isdir(d):
        return []
    return sorted(glob.glob(os.path.join(d, "*.expect.json")))


def orphan_traces():
    d = conformance_dir()
    if not d or not os.path.isdir(d):
        return []
    have = {os.path.basename(m)[: -len(".expect.json")] for m in manifests()}
    out = []
    for t in sorted(glob.glob(os.path.join(d, "*.pftrace")) + glob.glob(os.path.join(d, "*.pftrace.gz"))):
        name = os.path.basename(t).split(".pftrace")[0]
        if name not in have:
            out.append(t)
    return out


def _dir_problem():
    d = conformance_dir()
    if not d:
        return ("%s is not set: run the suite through scripts/test, which runs the Go tests "
                "with it set and then this checker" % ENV)
    if not os.path.isdir(d):
        return "%s=%s is not a directory" % (ENV, d)
    return None


def test_conformance_dir_exists():
    problem = _dir_problem()
    assert problem is None, problem


def test_required_manifests_present():
    problem = _dir_problem()
    assert problem is None, problem
    d = conformance_dir()
    missing = [n for n in required_names()
               if not os.path.isfile(os.path.join(d, n + ".expect.json"))]
    assert not missing, ("required manifests missing from %s: %s (conformance/required.txt); "
                         "found: %s" % (d, ", ".join(missing),
                                        ", ".join(os.path.basename(m) for m in manifests()) or "none"))


def _fmt(res):
    return "%s\n%s" % (res.summary(), pc.format_violations(res, 100))


@pytest.mark.parametrize("manifest_path", manifests() or [None],
                         ids=lambda p: os.path.basename(p)[: -len(".expect.json")] if p else "none")
def test_output_conforms(manifest_path):
    problem = _dir_problem()
    assert problem is None, problem
    assert manifest_path is not None, "no *.expect.json in %s=%s" % (ENV, conformance_dir())
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    name = os.path.basename(manifest_path)[: -len(".expect.json")]
    trace_name = manifest.get("trace") if isinstance(manifest, dict) else None
    assert trace_name in (name + ".pftrace", name + ".pftrace.gz"), (
        "%s: \"trace\" is %r; it must name %s.pftrace or %s.pftrace.gz beside it"
        % (manifest_path, trace_name, name, name))
    trace_path = os.path.join(os.path.dirname(manifest_path), trace_name)
    assert os.path.isfile(trace_path), "%s: trace file %s is missing" % (manifest_path, trace_path)
    res = pc.check_file(trace_path, manifest)
    assert res.ok, _fmt(res)
    assert res.manifest_checked


def test_traces_without_manifest_conform():
    """A trace in the directory without a manifest still meets the invariants."""
    problem = _dir_problem()
    assert problem is None, problem
    failures = []
    for trace_path in orphan_traces():
        res = pc.check_file(trace_path)
        if not res.ok:
            failures.append(_fmt(res))
    assert not failures, "\n\n".join(failures)
