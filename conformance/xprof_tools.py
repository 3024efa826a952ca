#!/usr/bin/env python3
"""Run xprof's OWN converters on an ``.xplane.pb`` file, in-process.

devprof writes TensorBoard profile files
(``<logdir>/plugins/profile/<run>/<host>.xplane.pb``, one serialized
``tensorflow.profiler.XSpace``). This module lets a test ask xprof itself
what it makes of such a file, through the same entry points the xprof /
TensorBoard profile plugin uses:

* tools: ``xprof.convert.raw_to_tool_data.xspace_to_tool_data(paths, tool,
  params) -> (data, content_type)``, where ``data`` is ``None`` on failure;
* tool list: ``raw_to_tool_data.xspace_to_tool_names(paths) -> [str]``;
* run / host / tool discovery: ``xprof.profile_plugin.ProfilePlugin``
  (``runs_imp``, ``host_impl``, ``run_tools_imp``), built on a minimal
  context object as ``xprof.server`` does.

Tested with ``xprof==2.24.2`` (PyPI), ``protobuf==7.36.2``, and
``jax[cpu]==0.12.0.1`` on Python 3.12 or ``jax[cpu]==0.10.2`` on Python 3.11
(jax 0.11+ needs Python >= 3.12).

xprof writes cache files (``*.op_stats_v2.pb``, ``*.hlo_proto.pb``,
``*.SSTABLE``, ``.cached_tools.json`` ...) next to the file it converts.
``run_tool`` therefore converts a private copy in a temporary run directory
and always passes ``use_saved_result=False``, so the caller's files are
never touched and never answered from a stale cache.

Library use (all paths are ``str`` or ``os.PathLike``)::

    run_tool(xplane_path, tool, options=None) -> parsed output
    tool_names(xplane_path) -> [tool names xprof offers for the file]
    trace_viewer_events(xplane_path, streaming=False) -> [event dicts]
    trace_viewer_event_details(xplane_path, streaming_event) -> full args
    trace_viewer_counters(xplane_path) -> [counter sample dicts]
    overview(xplane_path) -> dict (steps, step count, average step time ...)
    framework_op_stats(xplane_path) -> [row dicts]
    kernel_stats(xplane_path) -> [row dicts]
    discover_runs(logdir) -> [run names], newest first, as the UI lists them
    run_hosts(logdir, run, tool="trace_viewer@") -> [host names]
    run_tools(logdir, run) -> [tool names]
    load_xspace(path_or_bytes) -> XSpace message (schema defined here)
    dump_xspace(path_or_bytes) -> readable multi-line text

Command line::

    python conformance/xprof_tools.py FILE.xplane.pb [TOOL ...]
    python conformance/xprof_tools.py --dump FILE.xplane.pb
    python conformance/xprof_tools.py --runs LOGDIR
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import types
from typing import Any, Iterable, Optional

# xprof's native library logs every conversion step at INFO level on stderr;
# keep warnings and errors only unless the caller chose otherwise. Must be set
# before the library is loaded.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

XPROF_VERSION = "2.24.2"

# Tool names as xprof 2.24.2 spells them. "trace_viewer@" is the streaming
# trace viewer the UI uses; "trace_viewer" is the older one-shot JSON
# converter (same events, but it carries every event's args).
TRACE_VIEWER = "trace_viewer"
TRACE_VIEWER_STREAMING = "trace_viewer@"
OVERVIEW_PAGE = "overview_page"
FRAMEWORK_OP_STATS = "framework_op_stats"
KERNEL_STATS = "kernel_stats"

# overview_page returns a list of gviz DataTables in this order.
_OVERVIEW_TABLES = (
    "analysis",          # cols selfTimePercent..; p: duty cycle, idle % ...
    "input_analysis",    # one row per step; p: steptime_ms_average ...
    "run_environment",   # p: device_type, host_count ...
    "recommendation",    # p: statement, bottleneck ...
    "inference_latency",  # percentile table
    "step_breakdown",    # (empty on CPU)
    "diagnostics",       # cols severity, message: "No step marker observed"
)


class XprofToolError(RuntimeError):
    """xprof could not convert the file with the requested tool."""


# ----------------------------------------------------------------------------
# xprof entry points (imported lazily so that --dump works without xprof)


def _raw_to_tool_data():
    try:
        from xprof.convert import raw_to_tool_data  # pylint: disable=g-import-not-at-top
    except ImportError as e:  # pragma: no cover - environment problem
        raise ImportError(
            "xprof is not importable (pip install xprof==%s): %s"
            % (XPROF_VERSION, e)
        ) from e
    return raw_to_tool_data


def xprof_version() -> str:
    from xprof import version  # pylint: disable=g-import-not-at-top

    return version.__version__


def _private_copy(xplane_path: str | os.PathLike, tmp: str) -> str:
    """Copies the file to <tmp>/plugins/profile/run/<same name>; returns it."""
    src = os.fspath(xplane_path)
    if not os.path.isfile(src):
        raise FileNotFoundError(src)
    run_dir = os.path.join(tmp, "plugins", "profile", "run")
    os.makedirs(run_dir)
    dst = os.path.join(run_dir, os.path.basename(src))
    shutil.copyfile(src, dst)
    return dst


def run_tool_raw(
    xplane_paths: str | os.PathLike | Iterable[str | os.PathLike],
    tool: str,
    options: Optional[dict[str, Any]] = None,
) -> tuple[Any, str]:
    """Calls xprof's converter on private copies of the files.

    Returns ``(data, content_type)`` exactly as
    ``raw_to_tool_data.xspace_to_tool_data`` does: ``data`` is ``str`` for
    ``trace_viewer`` and ``bytes`` for the other tools. Raises XprofToolError
    when xprof reports failure (``data is None``).

    ``options`` go into the ``params`` dict; for the trace viewers they are
    the ``trace_viewer_options`` (e.g. ``{"resolution": "0"}``).
    """
    if isinstance(xplane_paths, (str, os.PathLike)):
        xplane_paths = [xplane_paths]
    r2t = _raw_to_tool_data()
    with tempfile.TemporaryDirectory(prefix="xprof_tools_") as tmp:
        copies = []
        for i, p in enumerate(xplane_paths):
            copies.append(_private_copy(p, os.path.join(tmp, str(i))))
        if len(copies) > 1:
            # Multi-host: xprof wants the hosts side by side in one run dir.
            run_dir = os.path.dirname(copies[0])
            moved = [copies[0]]
            for c in copies[1:]:
                dst = os.path.join(run_dir, os.path.basename(c))
                if os.path.exists(dst):
                    raise ValueError("two files named %s" % os.path.basename(c))
                shutil.move(c, dst)
                moved.append(dst)
            copies = moved
        params: dict[str, Any] = {"use_saved_result": False}
        if tool in (TRACE_VIEWER, TRACE_VIEWER_STREAMING):
            params["trace_viewer_options"] = dict(options or {})
        else:
            params.update(options or {})
        data, content_type = r2t.xspace_to_tool_data(copies, tool, params)
    if data is None:
        raise XprofToolError(
            "xprof %s failed on %s" % (tool, [os.fspath(p) for p in xplane_paths])
        )
    return data, content_type


def run_tool(
    xplane_path: str | os.PathLike | Iterable[str | os.PathLike],
    tool: str,
    options: Optional[dict[str, Any]] = None,
) -> Any:
    """Runs one xprof tool and returns its output parsed from JSON.

    * ``trace_viewer``: dict ``{"displayTimeUnit": "ns", "metadata": ...,
      "traceEvents": [...]}`` (Chrome trace JSON; ts/dur in microseconds).
    * ``trace_viewer@``: same shape plus streaming keys (``fullTimespan``,
      ``returnedEventsSize``, ``totalCounterEvents`` ...).
    * ``overview_page``: list of 7 gviz DataTables (``{"cols", "rows", "p"}``).
    * ``framework_op_stats``: list of 2 gviz DataTables (all ops, and ops
      without IDLE).
    * ``kernel_stats``: one gviz DataTable.
    * any other tool: parsed JSON when the output is JSON, else the bytes.
    """
    data, content_type = run_tool_raw(xplane_path, tool, options)
    if content_type != "application/json":
        return data
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text)


def tool_names(xplane_path: str | os.PathLike) -> list[str]:
    """Tools xprof offers for this file (what the UI's tool menu shows)."""
    r2t = _raw_to_tool_data()
    with tempfile.TemporaryDirectory(prefix="xprof_tools_") as tmp:
        copy = _private_copy(xplane_path, tmp)
        return list(r2t.xspace_to_tool_names([copy]))


# ----------------------------------------------------------------------------
# trace viewer


_INT_RE = re.compile(r"-?[0-9]+")
_FLOAT_RE = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")


def _num(v: Any) -> Any:
    """trace_viewer (non-streaming) writes every arg value as a string; give
    plain decimal numbers back as int/float, leave everything else alone."""
    if isinstance(v, str):
        if _INT_RE.fullmatch(v):
            return int(v)
        if _FLOAT_RE.fullmatch(v):
            return float(v)
    return v


def _names(events: list[dict]) -> tuple[dict, dict]:
    procs, threads = {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "process_name":
            procs[e["pid"]] = e.get("args", {}).get("name")
        elif e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e.get("args", {}).get("name")
    return procs, threads


def trace_viewer_events(
    xplane_path: str | os.PathLike,
    streaming: bool = False,
    options: Optional[dict[str, Any]] = None,
) -> list[dict]:
    """Slices and instants as xprof's trace viewer shows them.

    Returns dicts ``{pid, tid, name, ts_us, dur_us, ph, args, process_name,
    thread_name}``, in xprof's output order. ``ph`` is ``"X"`` for complete
    events and ``"i"`` for instants (non-streaming viewer; the streaming one
    shows zero-length events as ``"X"`` with dur 1e-06).

    streaming=False uses ``trace_viewer``: args hold every stat of the event
    (values parsed back to int/float where they look numeric; xprof writes
    them as strings). Process names are the plane names (``/host:CPU``),
    pids the xprof device ids (701 for ``/host:CPU``).

    streaming=True uses ``trace_viewer@`` with ``resolution=0`` (no
    down-sampling): what the UI draws. Process names are ``"<host> <plane>"``
    and pids are offset by 1000 per host (1701 for the first host's
    ``/host:CPU``). args hold only ``group_id``/``uid``: the UI fetches the
    full args of one event on click.
    """
    tool = TRACE_VIEWER_STREAMING if streaming else TRACE_VIEWER
    opts = {"resolution": "0"} if streaming else {}
    opts.update(options or {})
    trace = run_tool(xplane_path, tool, opts)
    events = [e for e in trace.get("traceEvents", []) if e]
    procs, threads = _names(events)
    out = []
    for e in events:
        if e.get("ph") not in ("X", "i", "I"):
            continue
        out.append(
            {
                "pid": e.get("pid"),
                "tid": e.get("tid"),
                "name": e.get("name"),
                "ts_us": e.get("ts"),
                "dur_us": e.get("dur", 0.0),
                "ph": e.get("ph"),
                "args": {k: _num(v) for k, v in e.get("args", {}).items()},
                "process_name": procs.get(e.get("pid")),
                "thread_name": threads.get((e.get("pid"), e.get("tid"))),
            }
        )
    return out


def trace_viewer_event_details(xplane_path: str | os.PathLike, event: dict) -> dict:
    """Full args of one event, as the streaming UI fetches them on click.

    ``event`` is a dict from ``trace_viewer_events(..., streaming=True)``;
    xprof is asked with ``event_name``, ``start_time_ms``, ``duration_ms``
    and ``unique_id`` (the event's ``uid`` arg). Returns the args dict
    (typed values, e.g. ``{"group_id": 0, "batch": 32}``), {} if not found.
    """
    opts = {
        "event_name": event["name"],
        "start_time_ms": repr(event["ts_us"] / 1000.0),
        "duration_ms": repr(event["dur_us"] / 1000.0),
        "unique_id": str(event["args"].get("uid", 0)),
        "format": "json",
    }
    trace = run_tool(xplane_path, TRACE_VIEWER_STREAMING, opts)
    for e in trace.get("traceEvents", []):
        if e and e.get("ph") == "X" and e.get("name") == event["name"]:
            return dict(e.get("args", {}))
    return {}


def trace_viewer_counters(xplane_path: str | os.PathLike) -> list[dict]:
    """Counter samples as the UI's streaming trace viewer shows them.

    Only ``trace_viewer@`` renders counters: every event of an XLine named
    exactly ``_counters_`` becomes one sample of the counter track named
    after the event (per plane). xprof writes one ``"ph": "C"`` record per
    track, ``{"pid", "name", "event_stats": <name of the FIRST stat>,
    "entries": [[ts_us, value_of_stat_1, value_of_stat_2, ...], ...]}``.
    (The non-streaming ``trace_viewer`` shows such lines as a thread named
    ``_counters_`` holding instants.)

    Returns one dict per sample: ``{pid, name, ts_us, value, values,
    stat_name, process_name}``; ``value`` is the first stat's value.
    """
    trace = run_tool(xplane_path, TRACE_VIEWER_STREAMING, {"resolution": "0"})
    events = [e for e in trace.get("traceEvents", []) if e]
    procs, _ = _names(events)
    out = []
    for e in events:
        if e.get("ph") != "C":
            continue
        for entry in e.get("entries", []):
            out.append(
                {
                    "pid": e.get("pid"),
                    "name": e.get("name"),
                    "ts_us": entry[0],
                    "value": entry[1] if len(entry) > 1 else None,
                    "values": list(entry[1:]),
                    "stat_name": e.get("event_stats"),
                    "process_name": procs.get(e.get("pid")),
                }
            )
    return out


# ----------------------------------------------------------------------------
# gviz tables


def gviz_rows(table: dict) -> list[dict]:
    """A gviz DataTable as a list of {column id: value} dicts."""
    ids = [c.get("id") for c in table.get("cols", [])]
    rows = []
    for r in table.get("rows", []):
        cells = r.get("c", [])
        rows.append(
            {ids[i]: (c or {}).get("v") for i, c in enumerate(cells) if i < len(ids)}
        )
    return rows


def overview(xplane_path: str | os.PathLike) -> dict:
    """The overview page, reduced to what a test asserts on.

    Keys: ``steps`` (list of ``{"name", "step_time_ms", ...}`` rows of the
    step-time graph, one per step xprof counted), ``step_count``,
    ``avg_step_time_ms`` (mean of the rows, full precision; None without
    steps), ``reported_avg_step_time_ms`` (xprof's own figure, a string
    rounded to 0.1 ms, e.g. "0.2"), ``diagnostics`` (list of
    ``{"severity", "message"}``; "No step marker observed ..." appears here
    when no step was found), ``no_step_marker`` (bool), ``hardware_type``,
    ``device_type``, ``host_count``, ``tables`` (the raw gviz tables, keyed
    by the names in _OVERVIEW_TABLES).
    """
    tables = run_tool(xplane_path, OVERVIEW_PAGE)
    named = {
        _OVERVIEW_TABLES[i] if i < len(_OVERVIEW_TABLES) else str(i): t
        for i, t in enumerate(tables)
    }
    ia = named.get("input_analysis", {})
    steps = []
    for r in gviz_rows(ia):
        row = dict(r)
        row["name"] = r.get("stepnum")
        row["step_time_ms"] = r.get("stepTimeMs")
        steps.append(row)
    diags = gviz_rows(named.get("diagnostics", {}))
    env = named.get("run_environment", {}).get("p", {})
    times = [s["step_time_ms"] for s in steps if s["step_time_ms"] is not None]
    return {
        "steps": steps,
        "step_count": len(steps),
        "avg_step_time_ms": (sum(times) / len(times)) if times else None,
        "reported_avg_step_time_ms": ia.get("p", {}).get("steptime_ms_average"),
        "diagnostics": diags,
        "no_step_marker": any(
            "No step marker observed" in str(d.get("message", "")) for d in diags
        ),
        "hardware_type": ia.get("p", {}).get("hardware_type"),
        "device_type": env.get("device_type"),
        "host_count": env.get("host_count"),
        "tables": named,
    }


def framework_op_stats(xplane_path: str | os.PathLike, include_idle: bool = False
                       ) -> list[dict]:
    """Rows of the framework op stats table ({column id: value}).

    Columns include ``host_or_device`` ("Host"/"Device"), ``type``,
    ``operation``, ``occurrences``, ``total_time`` / ``avg_time`` /
    ``total_self_time`` (microseconds). xprof returns two tables, the second
    without the IDLE row; include_idle picks the first.
    """
    tables = run_tool(xplane_path, FRAMEWORK_OP_STATS)
    if isinstance(tables, dict):
        tables = [tables]
    table = tables[0] if include_idle or len(tables) < 2 else tables[1]
    return gviz_rows(table)


def kernel_stats(xplane_path: str | os.PathLike) -> list[dict]:
    """Rows of the GPU kernel stats table ({column id: value}).

    Columns: rank, kernel_name, registers_per_thread, shmem_bytes, block_dim,
    grid_dim, occupancy_pct, is_op_tensor_core_eligible,
    is_kernel_using_tensor_core, op_name, occurrences, total_duration_us,
    avg_duration_us, min_duration_us, max_duration_us. Empty without device
    events carrying a ``kernel_details`` stat.
    """
    table = run_tool(xplane_path, KERNEL_STATS)
    if isinstance(table, list):
        table = table[0] if table else {}
    return gviz_rows(table)


# ----------------------------------------------------------------------------
# logdir discovery, as the profile plugin does it


def _plugin(logdir: str | os.PathLike):
    from xprof import profile_plugin  # pylint: disable=g-import-not-at-top

    # ProfilePlugin reads only these attributes of TensorBoard's TBContext.
    context = types.SimpleNamespace(
        logdir=os.fspath(logdir),
        data_provider=None,
        flags=types.SimpleNamespace(master_tpu_unsecure_channel=False),
    )
    return profile_plugin.ProfilePlugin(context)


def discover_runs(logdir: str | os.PathLike) -> list[str]:
    """Run names the profile plugin lists for the logdir (the /runs route).

    A run is any subdirectory of a ``plugins/profile`` directory under the
    logdir; ``<logdir>/plugins/profile/R`` is listed as ``R`` and
    ``<logdir>/a/b/plugins/profile/R`` as ``a/b/R``. Sorted in reverse
    (newest timestamp-named run first), like the UI.
    """
    return list(_plugin(logdir).runs_imp(None))


def run_hosts(logdir: str | os.PathLike, run: str, tool: str = TRACE_VIEWER_STREAMING
              ) -> list[str]:
    """Hosts the /hosts route offers for a run: the file names less
    ``.xplane.pb`` (plus ``ALL_HOSTS`` for some tools when there are several).
    """
    plugin = _plugin(logdir)
    list(plugin.generate_runs())  # fills the run -> directory map
    return [h["hostname"] for h in plugin.host_impl(run, tool)]


def run_tools(logdir: str | os.PathLike, run: str) -> list[str]:
    """Tools the /run_tools route offers for a run (from the xplane contents).

    Note: xprof writes ``.cached_tools.json`` into the run directory.
    """
    plugin = _plugin(logdir)
    list(plugin.generate_runs())
    return list(plugin.run_tools_imp(run))


# ----------------------------------------------------------------------------
# XSpace schema (xla/tsl/profiler/protobuf/xplane.proto), defined here so no
# generated module is needed: neither xprof nor jax ships an xplane_pb2.

_XSPACE_CLASSES: dict[str, Any] = {}


def xspace_classes() -> dict[str, Any]:
    """Message classes XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata,
    XStatMetadata (package tensorflow.profiler)."""
    if _XSPACE_CLASSES:
        return _XSPACE_CLASSES
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # pylint: disable=g-import-not-at-top

    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    pkg = ".tensorflow.profiler."
    fd = descriptor_pb2.FileDescriptorProto(
        name="devprof_conformance_xplane.proto",
        package="tensorflow.profiler",
        syntax="proto3",
    )

    def message(name, fields, oneof=None, nested=()):
        m = fd.message_type.add(name=name)
        for n in nested:
            m.nested_type.add().CopyFrom(n)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for fname, num, ftype, label, tname, in_oneof in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = pkg + tname
            if in_oneof:
                f.oneof_index = 0

    def map_entry(name, value_type):
        e = descriptor_pb2.DescriptorProto(name=name)
        e.options.map_entry = True
        e.field.add(name="key", number=1, type=F.TYPE_INT64, label=opt)
        e.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt,
                    type_name=pkg + value_type)
        return e

    message("XSpace", [
        ("planes", 1, F.TYPE_MESSAGE, rep, "XPlane", False),
        ("errors", 2, F.TYPE_STRING, rep, None, False),
        ("warnings", 3, F.TYPE_STRING, rep, None, False),
        ("hostnames", 4, F.TYPE_STRING, rep, None, False),
    ])
    message("XPlane", [
        ("id", 1, F.TYPE_INT64, opt, None, False),
        ("name", 2, F.TYPE_STRING, opt, None, False),
        ("lines", 3, F.TYPE_MESSAGE, rep, "XLine", False),
        ("event_metadata", 4, F.TYPE_MESSAGE, rep,
         "XPlane.EventMetadataEntry", False),
        ("stat_metadata", 5, F.TYPE_MESSAGE, rep,
         "XPlane.StatMetadataEntry", False),
        ("stats", 6, F.TYPE_MESSAGE, rep, "XStat", False),
    ], nested=[map_entry("EventMetadataEntry", "XEventMetadata"),
               map_entry("StatMetadataEntry", "XStatMetadata")])
    message("XLine", [
        ("id", 1, F.TYPE_INT64, opt, None, False),
        ("display_id", 10, F.TYPE_INT64, opt, None, False),
        ("name", 2, F.TYPE_STRING, opt, None, False),
        ("display_name", 11, F.TYPE_STRING, opt, None, False),
        ("timestamp_ns", 3, F.TYPE_INT64, opt, None, False),
        ("duration_ps", 9, F.TYPE_INT64, opt, None, False),
        ("events", 4, F.TYPE_MESSAGE, rep, "XEvent", False),
    ])
    message("XEvent", [
        ("metadata_id", 1, F.TYPE_INT64, opt, None, False),
        ("offset_ps", 2, F.TYPE_INT64, opt, None, True),
        ("num_occurrences", 5, F.TYPE_INT64, opt, None, True),
        ("duration_ps", 3, F.TYPE_INT64, opt, None, False),
        ("stats", 4, F.TYPE_MESSAGE, rep, "XStat", False),
    ], oneof="data")
    message("XStat", [
        ("metadata_id", 1, F.TYPE_INT64, opt, None, False),
        ("double_value", 2, F.TYPE_DOUBLE, opt, None, True),
        ("uint64_value", 3, F.TYPE_UINT64, opt, None, True),
        ("int64_value", 4, F.TYPE_INT64, opt, None, True),
        ("str_value", 5, F.TYPE_STRING, opt, None, True),
        ("bytes_value", 6, F.TYPE_BYTES, opt, None, True),
        ("ref_value", 7, F.TYPE_UINT64, opt, None, True),
    ], oneof="value")
    message("XEventMetadata", [
        ("id", 1, F.TYPE_INT64, opt, None, False),
        ("name", 2, F.TYPE_STRING, opt, None, False),
        ("display_name", 4, F.TYPE_STRING, opt, None, False),
        ("metadata", 3, F.TYPE_BYTES, opt, None, False),
        ("stats", 5, F.TYPE_MESSAGE, rep, "XStat", False),
        ("child_id", 6, F.TYPE_INT64, rep, None, False),
    ])
    message("XStatMetadata", [
        ("id", 1, F.TYPE_INT64, opt, None, False),
        ("name", 2, F.TYPE_STRING, opt, None, False),
        ("description", 3, F.TYPE_STRING, opt, None, False),
    ])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    for n in ("XSpace", "XPlane", "XLine", "XEvent", "XStat",
              "XEventMetadata", "XStatMetadata"):
        desc = pool.FindMessageTypeByName("tensorflow.profiler." + n)
        _XSPACE_CLASSES[n] = message_factory.GetMessageClass(desc)
    return _XSPACE_CLASSES


def load_xspace(src: str | os.PathLike | bytes):
    """Parses an XSpace from a file path or from bytes."""
    if isinstance(src, (bytes, bytearray)):
        data = bytes(src)
    else:
        with open(os.fspath(src), "rb") as f:
            data = f.read()
    space = xspace_classes()["XSpace"]()
    space.ParseFromString(data)
    return space


def stat_value(plane, stat) -> tuple[str, Any]:
    """(name, python value) of an XStat; ref_value is resolved to its string."""
    md = plane.stat_metadata.get(stat.metadata_id)
    name = md.name if md is not None else "?%d" % stat.metadata_id
    kind = stat.WhichOneof("value")
    if kind is None:
        return name, None
    value = getattr(stat, kind)
    if kind == "ref_value":
        ref = plane.stat_metadata.get(value)
        value = ref.name if ref is not None else None
    return name, value


def dump_xspace(src, max_events_per_line: int = 20) -> str:
    """Readable dump: planes, stat/event metadata, lines, events, stats
    (each stat written as name:kind=value)."""
    space = src if hasattr(src, "planes") else load_xspace(src)
    out = []
    w = out.append
    w("XSpace hostnames=%s errors=%s warnings=%s" % (
        list(space.hostnames), list(space.errors), list(space.warnings)))

    def fmt(plane, s):
        kind = s.WhichOneof("value")
        name, value = stat_value(plane, s)
        if kind == "bytes_value":
            value = "<%d bytes>" % len(value)
        elif kind == "ref_value":
            value = "ref %d -> %r" % (s.ref_value, value)
        return "%s:%s=%s" % (name, (kind or "none").replace("_value", ""), value)

    for plane in space.planes:
        w("")
        w("plane id=%d name=%r lines=%d event_metadata=%d stat_metadata=%d" % (
            plane.id, plane.name, len(plane.lines), len(plane.event_metadata),
            len(plane.stat_metadata)))
        for s in plane.stats:
            w("  plane stat %s" % fmt(plane, s))
        w("  stat_metadata: " + ", ".join(
            "%d=%r" % (k, v.name) for k, v in sorted(plane.stat_metadata.items())))
        for k, v in sorted(plane.event_metadata.items()):
            extra = ""
            if v.display_name and v.display_name != v.name:
                extra += " display_name=%r" % v.display_name
            if v.stats:
                extra += " stats=[%s]" % ", ".join(fmt(plane, s) for s in v.stats)
            if v.child_id:
                extra += " child_id=%s" % list(v.child_id)
            w("  event_metadata %d: %r%s" % (k, v.name[:200], extra))
        for line in plane.lines:
            w("  line id=%d display_id=%d name=%r display_name=%r timestamp_ns=%d "
              "duration_ps=%d events=%d" % (
                  line.id, line.display_id, line.name, line.display_name,
                  line.timestamp_ns, line.duration_ps, len(line.events)))
            for e in line.events[:max_events_per_line]:
                kind = e.WhichOneof("data")
                md = plane.event_metadata.get(e.metadata_id)
                w("    event %r %s=%s duration_ps=%d stats=[%s]" % (
                    md.name[:80] if md is not None else "?%d" % e.metadata_id,
                    kind, getattr(e, kind) if kind else None, e.duration_ps,
                    ", ".join(fmt(plane, s) for s in e.stats)))
            if len(line.events) > max_events_per_line:
                w("    ... %d more events" % (len(line.events) - max_events_per_line))
    return "\n".join(out)


# ----------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--dump":
        print(dump_xspace(argv[1]))
        return 0
    if len(argv) >= 2 and argv[0] == "--runs":
        for run in discover_runs(argv[1]):
            print(run, run_hosts(argv[1], run))
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    path, tools = argv[0], argv[1:] or [
        TRACE_VIEWER, OVERVIEW_PAGE, FRAMEWORK_OP_STATS, KERNEL_STATS]
    print("tools offered:", tool_names(path))
    for tool in tools:
        if tool == OVERVIEW_PAGE:
            o = overview(path)
            o.pop("tables")
            print(OVERVIEW_PAGE, json.dumps(o, indent=1))
        elif tool in (TRACE_VIEWER, TRACE_VIEWER_STREAMING):
            evs = trace_viewer_events(path, streaming=tool == TRACE_VIEWER_STREAMING)
            print(tool, len(evs), "events")
            for e in evs[:50]:
                print(" ", json.dumps(e))
        else:
            print(tool, json.dumps(run_tool(path, tool))[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
