#!/usr/bin/env python3
"""Independent Perfetto conformance checker for devprof's trace files.

It decodes a Perfetto protobuf trace with the OFFICIAL schema (PyPI
``perfetto`` ships the generated ``perfetto_trace_pb2``) plus a small
protobuf wire walker of its own, and re-implements the trace_processor (TP)
import rules that decide whether ui.perfetto.dev shows what was recorded:
sequences and incremental state, interning, track descriptors, clocks,
slice nesting, counters, flows and raw wire encoding. With a manifest (the
``<name>.expect.json`` that devprof's Go tests write from the recorder's own
records) it also checks that every span, instant, argument, counter sample
and flow is in the file exactly as recorded.

Usage::

    python conformance/perfetto_check.py TRACE [--expect MANIFEST.json]

prints a summary and exits 0 when the trace conforms, 1 listing every
violation otherwise, 2 on a usage error (unreadable file or manifest).

Library use: ``check_file(path, manifest=None) -> Result`` and
``check_bytes(data, manifest=None) -> Result``; ``Result.violations`` is the
list of messages, each naming the packet index (0-based, file order), the
sequence id and the field concerned. The packets inside a
TracePacket.compressed_packets (zlib, as Perfetto's service writes them and
devprof's writer does by default) are checked in its place, as TP's
tokenizer splices them into the stream; packet indices count them, not the
compressed packet that held them.

Invariants checked on every trace (TP = trace_processor's import rules):
 1. every packet has trusted_packet_sequence_id != 0;
 2. each sequence's first packet sets SEQ_INCREMENTAL_STATE_CLEARED; packets
    that need incremental state while it is invalid are reported (TP skips
    them), as is previous_packet_dropped;
 3. every iid used (event name, categories, annotation names, interned string
    values) is >= 1 and defined earlier on the same sequence since its last
    clear;
 4. every track uuid an event uses is described earlier in the file; every
    parent_uuid is described; one uuid per pid and per (pid, tid); a uuid
    described twice must be described identically;
 5. every TrackEvent packet has a timestamp;
 6. clocks resolve as in TP (packet clock, else the sequence default, else
    BOOTTIME; sequence-scoped clocks 64..127 need a ClockSnapshot earlier on
    the sequence; incremental clocks accumulate deltas from the snapshot
    value; conversion uses the snapshot holding both clocks whose source value
    is the latest not after the timestamp); the first ClockSnapshot holds
    BOOTTIME and REALTIME;
 7. per track, events sorted by (ts, file order) nest as a stack: no END
    without an open slice, no slice left open;
 8. TYPE_COUNTER only on counter tracks, nothing else on them, each with a
    value;
 9. raw wire types match the schema (flow_ids / terminating_flow_ids are
    fixed64) and no repeated scalar is packed;
10. process tracks have a process_name, thread tracks a thread_name, and there
    is a process track.

The manifest contract (``<name>.expect.json``; all keys required except
``extra_slices``, ``meta``, ``description`` and keys starting with "_")::

    {"trace": "<name>.pftrace" | "<name>.pftrace.gz",
     "process_name": "devprof.test",        # a process track has this name
     "dropped": 0,                           # > 0: a 'devprof:' INSTANT whose name
                                             #   holds the number, with int
                                             #   annotation dropped_events = N
     "spans": [{"name": str, "ts": int ns, "dur": int ns,
                "parent": str | null, "args": {name: {"type": t, "value": v}}}],
     "instants": [{"name": str, "ts": int ns, "args": {...}}],
     "counters": [{"name": str, "unit": str, "samples": [[int ns, number], ...]}],
     "flows": [[source span name, destination span name], ...],
     "extra_slices": [names of trace slices the manifest does not list]}

ts are absolute BOOTTIME ns after clock resolution. Spans and instants are
compared as multisets (names repeat), args exactly: t is int, uint, double,
bool or string and must match the DebugAnnotation field used (int_value,
uint_value, double_value, bool_value, string_value / string_value_iid). A
span's parent is the slice open beneath it on its track when it begins; the
first slice of a track stack (a displaced child) may instead carry
terminating_flow_ids [X] on its BEGIN, X being in its parent's BEGIN
flow_ids. Other flow ids are user flows: per id, the events carrying it
sorted by (ts, file order) give the edges first->second->third..., as TP
draws them. Counters are matched by (track name, CounterDescriptor.unit_name
or ""), samples as multisets of (ts, value); every counter track with samples
must be listed. Everything is exact: nothing missing, nothing extra.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gzip
import json
import os
import re
import sys
import zlib
from typing import Any, Callable, Iterable, Optional

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    from google.protobuf import message as _pb_message
    from google.protobuf.descriptor import FieldDescriptor
except ImportError as _err:  # pragma: no cover - environment problem
    sys.stderr.write(
        "perfetto_check: cannot import the official Perfetto schema (%s).\n"
        "Install conformance/requirements.txt, e.g. run scripts/pyenv and use "
        ".venv/bin/python.\n" % _err
    )
    raise

# ---------------------------------------------------------------------------
# Constants from the Perfetto schema (see shared/reference/perfetto.md §1).

BOOTTIME = 6
REALTIME = 1
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

TYPE_SLICE_BEGIN = 1
TYPE_SLICE_END = 2
TYPE_INSTANT = 3
TYPE_COUNTER = 4
TYPE_NAMES = {0: "TYPE_UNSPECIFIED", 1: "TYPE_SLICE_BEGIN", 2: "TYPE_SLICE_END",
              3: "TYPE_INSTANT", 4: "TYPE_COUNTER", 5: "TYPE_STATE"}

MAX_SLICE_DEPTH = 512          # TP: slice_max_depth_exceeded
MAX_EXTRA_COUNTERS = 8         # TP: kMaxNumExtraCounters
MAX_TRACK_DEPTH = 100          # TP: track_event_track_hierarchy_too_deep

# InternedData field number -> (field name, attribute of the entry that holds
# the interned value). Only the tables TrackEvents refer to.
INTERN_TABLES = {
    1: ("event_categories", "name"),
    2: ("event_names", "name"),
    3: ("debug_annotation_names", "name"),
    27: ("debug_annotation_value_type_names", "name"),
    29: ("debug_annotation_string_values", "str"),
    43: ("correlation_id_str", "str"),
}
INTERN_EVENT_CATEGORIES = 1
INTERN_EVENT_NAMES = 2
INTERN_DEBUG_ANNOTATION_NAMES = 3
INTERN_DEBUG_ANNOTATION_VALUE_TYPE_NAMES = 27
INTERN_DEBUG_ANNOTATION_STRING_VALUES = 29
INTERN_CORRELATION_ID_STR = 43

# DebugAnnotation value field -> manifest arg type.
ARG_TYPES = {
    "int_value": "int",
    "uint_value": "uint",
    "double_value": "double",
    "bool_value": "bool",
    "string_value": "string",
    "string_value_iid": "string",
}
MANIFEST_ARG_TYPES = ("int", "uint", "double", "bool", "string")
MANIFEST_KEYS_REQUIRED = ("trace", "process_name", "dropped", "spans", "instants",
                          "counters", "flows")
MANIFEST_KEYS_OPTIONAL = ("extra_slices", "meta", "description")


class TraceFormatError(Exception):
    """The file cannot be framed as a sequence of TracePacket records."""


# ---------------------------------------------------------------------------
# Protobuf wire walker (independent of the protobuf library).

WIRE_NAMES = {0: "varint", 1: "fixed64", 2: "length-delimited", 3: "start-group",
              4: "end-group", 5: "fixed32"}


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise TraceFormatError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise TraceFormatError("varint longer than 10 bytes")


def iter_fields(buf: bytes, pos: int, end: int) -> Iterable[tuple[int, int, int, int]]:
    """Yields (field number, wire type, a, b) for each field in buf[pos:end].

    varint: a = value; fixed64/fixed32: a = offset of the payload;
    length-delimited: a, b = payload start and end offsets.
    Raises TraceFormatError on malformed or truncated input.
    """
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise TraceFormatError("field number 0")
        if wt == 0:
            v, pos = _read_varint(buf, pos, end)
            yield num, wt, v, 0
        elif wt == 1:
            if pos + 8 > end:
                raise TraceFormatError("truncated fixed64 field %d" % num)
            yield num, wt, pos, 0
            pos += 8
        elif wt == 2:
            n, pos = _read_varint(buf, pos, end)
            if pos + n > end:
                raise TraceFormatError(
                    "field %d declares %d bytes but only %d remain" % (num, n, end - pos))
            yield num, wt, pos, pos + n
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                raise TraceFormatError("truncated fixed32 field %d" % num)
            yield num, wt, pos, 0
            pos += 4
        else:
            raise TraceFormatError("unsupported wire type %d (field %d)" % (wt, num))


def _expected_wire(fd: FieldDescriptor) -> int:
    t = fd.type
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FIXED64,
             FieldDescriptor.TYPE_SFIXED64):
        return 1
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_FIXED32,
             FieldDescriptor.TYPE_SFIXED32):
        return 5
    if t in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES,
             FieldDescriptor.TYPE_MESSAGE):
        return 2
    if t == FieldDescriptor.TYPE_GROUP:
        return 3
    return 0


_SPEC_CACHE: dict[str, dict[int, tuple]] = {}


def _spec(desc) -> dict[int, tuple]:
    """field number -> (name, expected wire type, repeated, packed, sub-descriptor)."""
    s = _SPEC_CACHE.get(desc.full_name)
    if s is None:
        s = {}
        for fd in desc.fields:
            sub = fd.message_type if fd.type == FieldDescriptor.TYPE_MESSAGE else None
            s[fd.number] = (fd.name, _expected_wire(fd), fd.is_repeated, fd.is_packed, sub)
        _SPEC_CACHE[desc.full_name] = s
    return s


def wire_check(buf: bytes, pos: int, end: int, desc, path: str,
               report: Callable[[str, str], None], depth: int = 0) -> None:
    """Checks the raw encoding of one message against the official schema.

    Reports fields whose wire type differs from the schema (e.g. flow_ids
    written as varints instead of fixed64) and repeated scalars written
    packed (TP's protozero decoder reads a packed blob in an unpacked-declared
    field as one garbage value). Unknown fields are skipped, as TP does.
    """
    spec = _spec(desc)
    for num, wt, a, b in iter_fields(buf, pos, end):
        f = spec.get(num)
        if f is None:
            continue
        name, want, repeated, packed, sub = f
        fpath = "%s.%s" % (path, name)
        if wt == want:
            if sub is not None and depth < 64:
                wire_check(buf, a, b, sub, fpath, report, depth + 1)
            continue
        if wt == 2 and repeated and want != 2:
            if not packed:
                report(fpath, "field %d (%s) is packed (wire type 2); the schema declares it "
                       "unpacked: write one tag per element, TP's protozero decoder reads a "
                       "packed blob in this field as garbage" % (num, name))
            continue
        report(fpath, "field %d (%s) has wire type %d (%s); the schema says wire type %d (%s)"
               % (num, name, wt, WIRE_NAMES.get(wt, "?"), want, _type_word(desc, num, want)))


def _type_word(desc, num: int, want: int) -> str:
    fd = desc.fields_by_number[num]
    if fd.type == FieldDescriptor.TYPE_FIXED64:
        return "fixed64"
    if fd.type == FieldDescriptor.TYPE_DOUBLE:
        return "double, 64-bit"
    return WIRE_NAMES.get(want, "?")


# ---------------------------------------------------------------------------
# File reading and framing.

def decode_container(raw: bytes) -> tuple[bytes, str]:
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw), "gzip, %d bytes compressed" % len(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceFormatError("corrupt or truncated gzip file: %s" % e) from None
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        raise TraceFormatError("zstd-compressed traces are not supported by this checker")
    return raw, "raw protobuf"


COMPRESSED_PACKETS = 50         # TracePacket.compressed_packets (zlib/deflate)
ZSTD_COMPRESSED_PACKETS = 133   # TracePacket.zstd_compressed_packets


def expand_compressed(data: bytes) -> tuple[bytes, int]:
    """Returns data with each TracePacket that holds compressed_packets
    replaced by the packets it inflates to, and how many were inflated.

    TP's tokenizer inflates compressed_packets (zlib or gzip headers, both
    accepted: inflateInit2 with 32+MAX_WBITS) and reads the framed packets
    inside in place, before sequence ids or timestamps matter; the holding
    packet is nothing else. Raises TraceFormatError for what TP would
    refuse: a stream that does not inflate or ends early, inner bytes that
    are not framed TracePackets, compressed packets inside compressed
    packets, and (this checker's limit) zstd."""
    try:
        frames = split_packets(data)
    except TraceFormatError:
        return data, 0      # Checker.run reports the broken framing itself
    out = bytearray()
    inflated = 0
    for idx, (start, end) in enumerate(frames):
        try:
            fields = list(iter_fields(data, start, end))
        except TraceFormatError:
            fields = []     # Checker.packet reports the corrupt packet itself
        nums = {f[0] for f in fields}
        if ZSTD_COMPRESSED_PACKETS in nums:
            raise TraceFormatError("packet %d: zstd_compressed_packets are not supported by "
                                   "this checker" % idx)
        if COMPRESSED_PACKETS not in nums:
            out += b"\x0a" + varint_bytes(end - start) + data[start:end]
            continue
        if len(fields) != 1 or fields[0][1] != 2:
            raise TraceFormatError("packet %d: compressed_packets must be the packet's only "
                                   "field, length-delimited (it holds fields %s)"
                                   % (idx, sorted(nums)))
        _, _, a, b = fields[0]
        d = zlib.decompressobj(32 + zlib.MAX_WBITS)
        try:
            inner = d.decompress(data[a:b])
        except zlib.error as e:
            raise TraceFormatError("packet %d: compressed_packets do not inflate: %s"
                                   % (idx, e)) from None
        if not d.eof:
            raise TraceFormatError("packet %d: compressed_packets end before their zlib "
                                   "stream does" % idx)
        if d.unused_data:
            raise TraceFormatError("packet %d: %d bytes after the zlib stream of "
                                   "compressed_packets" % (idx, len(d.unused_data)))
        try:
            for s2, e2 in split_packets(inner):
                if any(f[0] in (COMPRESSED_PACKETS, ZSTD_COMPRESSED_PACKETS)
                       for f in iter_fields(inner, s2, e2)):
                    raise TraceFormatError("compressed_packets inside compressed_packets")
        except TraceFormatError as e:
            raise TraceFormatError("packet %d: inside compressed_packets: %s" % (idx, e)) from None
        out += inner
        inflated += 1
    return (bytes(out) if inflated else data), inflated


def varint_bytes(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def split_packets(data: bytes) -> list[tuple[int, int]]:
    """Frames data as a Trace: a sequence of `packet` (field 1, length-delimited)
    records. Returns [(start, end)] of each TracePacket's bytes."""
    out = []
    pos, end = 0, len(data)
    while pos < end:
        rec = pos
        try:
            key, p = _read_varint(data, pos, end)
        except TraceFormatError:
            raise TraceFormatError(
                "truncated or corrupt file: record %d at byte offset %d has a bad tag"
                % (len(out), rec)) from None
        num, wt = key >> 3, key & 7
        if num != 1 or wt != 2:
            raise TraceFormatError(
                "corrupt file: byte offset %d (after %d packets) holds field %d wire type %d; "
                "a Trace holds only TracePacket records (field 1, length-delimited, tag 0x0A)"
                % (rec, len(out), num, wt))
        try:
            n, p = _read_varint(data, p, end)
        except TraceFormatError:
            raise TraceFormatError(
                "truncated file: packet %d at byte offset %d has an incomplete length"
                % (len(out), rec)) from None
        if p + n > end:
            raise TraceFormatError(
                "truncated file: packet %d at byte offset %d declares %d bytes but only %d remain"
                % (len(out), rec, n, end - p))
        out.append((p, p + n))
        pos = p + n
    return out


# ---------------------------------------------------------------------------
# Model.

@dataclasses.dataclass
class Track:
    uuid: int
    packet: int
    seq: int
    desc: Any
    kind: str                   # process | thread | counter | plain
    name: str
    pid: Optional[int] = None
    tid: Optional[int] = None
    parent: Optional[int] = None
    unit: str = ""


@dataclasses.dataclass
class Event:
    packet: int
    seq: int
    type: int
    track: int
    name: Optional[str]
    args: dict                  # name -> (type, value, field)
    flows: list
    term: list
    clock: Optional[tuple] = None   # (clock key, ns in that clock)
    ts: Optional[int] = None         # resolved BOOTTIME ns
    counter: Any = None
    extra: list = dataclasses.field(default_factory=list)   # [(uuid, value)]


@dataclasses.dataclass(eq=False)
class Slice:
    name: Optional[str]
    ts: int
    kind: str                   # span | instant
    track: int
    begin: Event
    end_ev: Optional[Event] = None
    dur: Optional[int] = None
    depth: int = 0
    stack_parent: Optional["Slice"] = None
    link_parent: Optional["Slice"] = None
    args: dict = dataclasses.field(default_factory=dict)

    @property
    def parent(self) -> Optional["Slice"]:
        return self.stack_parent or self.link_parent

    def where(self) -> str:
        return "packet %d, seq %d" % (self.begin.packet, self.begin.seq)


@dataclasses.dataclass
class Result:
    path: str
    container: str = ""
    size: int = 0
    packets: int = 0
    violations: list = dataclasses.field(default_factory=list)
    sequences: set = dataclasses.field(default_factory=set)
    tracks: dict = dataclasses.field(default_factory=dict)
    spans: list = dataclasses.field(default_factory=list)
    instants: list = dataclasses.field(default_factory=list)
    counters: dict = dataclasses.field(default_factory=dict)   # uuid -> [(ts, value)]
    flows: list = dataclasses.field(default_factory=list)      # [(src Slice, dst Slice, id)]
    parent_links: list = dataclasses.field(default_factory=list)
    first_ts: Optional[int] = None
    last_ts: Optional[int] = None
    manifest_checked: bool = False

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        kinds = collections.Counter(t.kind for t in self.tracks.values())
        samples = sum(len(v) for v in self.counters.values())
        lines = [
            "trace: %s (%s, %d bytes of packets)" % (self.path, self.container, self.size),
            "packets: %d on %d sequence(s)" % (self.packets, len(self.sequences)),
            "tracks: %d process, %d thread, %d counter, %d other"
            % (kinds["process"], kinds["thread"], kinds["counter"], kinds["plain"]),
            "slices: %d spans, %d instants; %d counter samples; %d flows; %d parent links"
            % (len(self.spans), len(self.instants), samples, len(self.flows),
               len(self.parent_links)),
        ]
        if self.first_ts is not None:
            lines.append("time: %d .. %d ns (BOOTTIME), %.6f s"
                         % (self.first_ts, self.last_ts, (self.last_ts - self.first_ts) / 1e9))
        lines.append("manifest: %s" % ("checked" if self.manifest_checked else "none"))
        lines.append("violations: %d" % len(self.violations))
        return "\n".join(lines)


class _Seq:
    __slots__ = ("id", "first_packet", "valid", "generation", "interned", "defaults",
                 "incr", "defs_all", "counter_acc")

    def __init__(self, sid: int, first: int):
        self.id = sid
        self.first_packet = first
        self.valid = False
        self.generation = 0
        self.interned: dict[int, dict[int, str]] = {}
        self.defaults = None
        self.incr: dict[tuple, int] = {}        # incremental clock key -> last ns
        self.defs_all: dict[tuple, int] = {}    # (table, iid) -> first defining packet
        self.counter_acc: dict[int, float] = {}

    def clear(self):
        self.valid = True
        self.generation += 1
        self.interned = {}
        self.defaults = None
        self.counter_acc = {}


def _clock_key(clock_id: int, seq: int) -> tuple[int, int]:
    return (clock_id, seq if 64 <= clock_id <= 127 else 0)


def _clock_name(key: tuple[int, int]) -> str:
    names = {1: "REALTIME", 2: "REALTIME_COARSE", 3: "MONOTONIC", 4: "MONOTONIC_COARSE",
             5: "MONOTONIC_RAW", 6: "BOOTTIME", 9: "TSC", 10: "PERF", 11: "TRACE_FILE"}
    cid, seq = key
    if cid in names:
        return "%d (%s)" % (cid, names[cid])
    if seq:
        return "%d (sequence-scoped, seq %d)" % (cid, seq)
    return str(cid)


# ---------------------------------------------------------------------------
# The checker.

class Checker:
    def __init__(self, data: bytes, path: str = "<bytes>", container: str = "raw protobuf"):
        self.data = data
        self.r = Result(path=path, container=container, size=len(data))
        self.seqs: dict[int, _Seq] = {}
        self.tracks: dict[int, Track] = self.r.tracks
        self.pid_uuid: dict[int, int] = {}
        self.thread_uuid: dict[tuple, int] = {}
        self.snapshots: list[tuple[int, dict]] = []        # (packet, {key: ns})
        self.clock_mult: dict[tuple, int] = {}
        self.clock_incremental: dict[tuple, bool] = {}
        self.events: list[Event] = []
        self.pending_iids: list[tuple] = []                 # undefined iid uses
        self.counter_samples: dict[int, list] = self.r.counters

    def v(self, msg: str) -> None:
        self.r.violations.append(msg)

    # -- pass 1: packets in file order ---------------------------------------

    def run(self) -> Result:
        if not self.data:
            self.v("empty trace: the file holds no packets")
            return self.r
        try:
            frames = split_packets(self.data)
        except TraceFormatError as e:
            self.v(str(e))
            return self.r
        self.r.packets = len(frames)
        for idx, (start, end) in enumerate(frames):
            self.packet(idx, start, end)
        self.finish_tracks()
        self.resolve_clocks()
        self.build_slices()
        self.check_processes()
        return self.r

    def packet(self, idx: int, start: int, end: int) -> None:
        wire_problems: list[tuple[str, str]] = []
        try:
            wire_check(self.data, start, end, pb.TracePacket.DESCRIPTOR, "TracePacket",
                       lambda p, m: wire_problems.append((p, m)))
        except TraceFormatError as e:
            self.v("packet %d: corrupt TracePacket bytes (byte offset %d): %s" % (idx, start, e))
            return
        try:
            pkt = pb.TracePacket.FromString(self.data[start:end])
        except _pb_message.DecodeError as e:
            self.v("packet %d: cannot decode TracePacket (byte offset %d): %s" % (idx, start, e))
            return
        sid = pkt.trusted_packet_sequence_id
        where = "packet %d (seq %d)" % (idx, sid)
        for p, m in wire_problems:
            self.v("%s: %s: %s" % (where, p, m))

        # Rule 1: a non-zero sequence id on every packet.
        if not pkt.HasField("trusted_packet_sequence_id") or sid == 0:
            self.v("%s: TracePacket.trusted_packet_sequence_id is missing or 0 (TP drops "
                   "track events, interned data and defaults without a sequence id)" % where)
        self.r.sequences.add(sid)

        seq = self.seqs.get(sid)
        first = seq is None
        if first:
            seq = self.seqs[sid] = _Seq(sid, idx)
        flags = pkt.sequence_flags
        cleared = bool(flags & SEQ_INCREMENTAL_STATE_CLEARED) or pkt.incremental_state_cleared
        # Rule 2: the first packet of each sequence clears incremental state.
        if first and not flags & SEQ_INCREMENTAL_STATE_CLEARED:
            self.v("%s: first packet of sequence %d lacks SEQ_INCREMENTAL_STATE_CLEARED (bit 1) "
                   "in TracePacket.sequence_flags (=%d): TP treats the sequence's incremental "
                   "state as invalid" % (where, sid, flags))
        if cleared and sid != 0:
            seq.clear()
        elif pkt.previous_packet_dropped and not first:
            self.v("%s: TracePacket.previous_packet_dropped=%d invalidates the sequence's "
                   "incremental state" % (where, pkt.previous_packet_dropped))
            seq.valid = False
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
            self.v("%s: TracePacket.sequence_flags has SEQ_NEEDS_INCREMENTAL_STATE but the "
                   "sequence's incremental state is not valid: TP skips the packet" % where)
            return

        if pkt.HasField("trace_packet_defaults"):
            if seq.valid:
                seq.defaults = pkt.trace_packet_defaults
            else:
                self.v("%s: TracePacket.trace_packet_defaults on a sequence whose incremental "
                       "state was never cleared: TP ignores them" % where)
        if pkt.HasField("interned_data"):
            if seq.valid:
                self.intern(pkt.interned_data, seq, idx, where)
            else:
                self.v("%s: TracePacket.interned_data on a sequence whose incremental state "
                       "was never cleared: TP ignores it" % where)

        if pkt.HasField("clock_snapshot"):
            self.clock_snapshot(pkt.clock_snapshot, seq, idx, where)
            return          # TP returns before reading the packet's timestamp.

        clock = None
        if pkt.HasField("timestamp"):
            clock = self.packet_clock(pkt, seq, where)

        which = pkt.WhichOneof("data")
        if which == "track_descriptor":
            self.track_descriptor(pkt.track_descriptor, idx, sid, where)
        elif which == "track_event":
            self.track_event(pkt, seq, idx, where, clock)
        elif which in ("compressed_packets", "zstd_compressed_packets"):
            # expand_compressed inflated every one before the checker ran.
            self.v("%s: TracePacket.%s left in the stream" % (where, which))

    def intern(self, idata, seq: _Seq, idx: int, where: str) -> None:
        for fd, entries in idata.ListFields():
            table = INTERN_TABLES.get(fd.number)
            if table is None:
                continue
            tname, attr = table
            t = seq.interned.setdefault(fd.number, {})
            for e in entries:
                if e.iid == 0:
                    self.v("%s: InternedData.%s has an entry with iid 0 (iids start at 1)"
                           % (where, tname))
                    continue
                val = getattr(e, attr)
                if isinstance(val, bytes):
                    try:
                        val = val.decode("utf-8")
                    except UnicodeDecodeError:
                        self.v("%s: InternedData.%s iid %d is not valid UTF-8"
                               % (where, tname, e.iid))
                        val = val.decode("utf-8", "replace")
                old = t.get(e.iid)
                if old is not None and old != val:
                    self.v("%s: InternedData.%s redefines iid %d as %r (was %r) without an "
                           "incremental state clear" % (where, tname, e.iid, val, old))
                t[e.iid] = val
                seq.defs_all.setdefault((fd.number, e.iid), idx)

    def lookup(self, seq: _Seq, table: int, iid: int, idx: int, where: str,
               field: str) -> Optional[str]:
        tname = INTERN_TABLES[table][0]
        if iid == 0:
            self.v("%s: %s=0 is invalid (iids start at 1; 0 means unset)" % (where, field))
            return None
        val = seq.interned.get(table, {}).get(iid) if seq.valid else None
        if val is None:
            self.pending_iids.append((seq, table, iid, idx, where, field, seq.generation))
            return None
        return val

    # -- clocks ---------------------------------------------------------------

    def clock_snapshot(self, cs, seq: _Seq, idx: int, where: str) -> None:
        if cs.HasField("primary_trace_clock") and cs.primary_trace_clock not in (0, BOOTTIME):
            self.v("%s: ClockSnapshot.primary_trace_clock=%d: the trace clock must be BOOTTIME "
                   "(6), as the manifest's timestamps are" % (where, cs.primary_trace_clock))
        vals: dict[tuple, int] = {}
        for c in cs.clocks:
            key = _clock_key(c.clock_id, seq.id)
            mult = c.unit_multiplier_ns or 1
            old = self.clock_mult.setdefault(key, mult)
            if old != mult:
                self.v("%s: ClockSnapshot clock %s changes unit_multiplier_ns from %d to %d"
                       % (where, _clock_name(key), old, mult))
            if c.is_incremental and not 64 <= c.clock_id <= 127:
                self.v("%s: ClockSnapshot clock %s is_incremental, allowed only for "
                       "sequence-scoped clocks (64..127)" % (where, _clock_name(key)))
            ns = c.timestamp * mult
            vals[key] = ns
            self.clock_incremental[key] = c.is_incremental
            if c.is_incremental:
                seq.incr[key] = ns
        self.snapshots.append((idx, vals))

    def packet_clock(self, pkt, seq: _Seq, where: str) -> Optional[tuple]:
        cid = pkt.timestamp_clock_id
        src = "TracePacket.timestamp_clock_id"
        if not cid and seq.defaults is not None and seq.defaults.timestamp_clock_id:
            cid = seq.defaults.timestamp_clock_id
            src = "TracePacketDefaults.timestamp_clock_id"
        if not cid:
            return ((BOOTTIME, 0), pkt.timestamp)
        key = _clock_key(cid, seq.id)
        if 64 <= cid <= 127:
            if key not in self.clock_mult:
                self.v("%s: %s=%d is a sequence-scoped clock that no earlier ClockSnapshot on "
                       "sequence %d defines: TP drops the packet" % (where, src, cid, seq.id))
                return None
        mult = self.clock_mult.get(key, 1)
        ns = pkt.timestamp * mult
        if self.clock_incremental.get(key):
            ns += seq.incr[key]
            seq.incr[key] = ns
        return (key, ns)

    def resolve_clocks(self) -> None:
        snaps = self.snapshots
        if not snaps:
            self.v("trace: no ClockSnapshot: the first one must pair BOOTTIME (6) with "
                   "REALTIME (1) so the UI can show wall time")
        else:
            idx, first = snaps[0]
            missing = [n for n, k in (("BOOTTIME (6)", (BOOTTIME, 0)), ("REALTIME (1)", (REALTIME, 0)))
                       if k not in first]
            if missing:
                self.v("packet %d: the first ClockSnapshot lacks %s (ClockSnapshot.clocks): the "
                       "UI reads wall time from the first snapshot" % (idx, " and ".join(missing)))
        boot = (BOOTTIME, 0)
        per_clock: dict[tuple, list] = {}
        for _, vals in snaps:
            if boot not in vals:
                continue
            for key, ns in vals.items():
                per_clock.setdefault(key, []).append((ns, vals[boot]))
        for lst in per_clock.values():
            lst.sort()
        for ev in self.events:
            if ev.clock is None:
                continue
            key, ns = ev.clock
            if key == boot:
                ts = ns
            else:
                pts = per_clock.get(key)
                if not pts:
                    self.v("packet %d (seq %d): timestamp on clock %s cannot be converted to "
                           "BOOTTIME: no ClockSnapshot contains both clocks (TP drops the event)"
                           % (ev.packet, ev.seq, _clock_name(key)))
                    continue
                # TP picks the snapshot whose source value is the latest one not after
                # the timestamp (or the first snapshot when all are later).
                src, dst = pts[0]
                for s, d in pts:
                    if s <= ns:
                        src, dst = s, d
                    else:
                        break
                ts = ns - src + dst
            if ts < 0:
                self.v("packet %d (seq %d): timestamp resolves to %d ns, negative: TP drops the "
                       "event" % (ev.packet, ev.seq, ts))
                continue
            ev.ts = ts
            if self.r.first_ts is None or ts < self.r.first_ts:
                self.r.first_ts = ts
            if self.r.last_ts is None or ts > self.r.last_ts:
                self.r.last_ts = ts

    # -- tracks ---------------------------------------------------------------

    def track_descriptor(self, td, idx: int, sid: int, where: str) -> None:
        w = where + ": TrackDescriptor"
        if not td.HasField("uuid"):
            self.v("%s has no uuid: TP drops it" % w)
            return
        u = td.uuid
        w = "%s uuid %d" % (w, u)
        old = self.tracks.get(u)
        if old is not None:
            if old.desc.SerializeToString(deterministic=True) != td.SerializeToString(deterministic=True):
                a = {f.name: val for f, val in old.desc.ListFields()}
                b = {f.name: val for f, val in td.ListFields()}
                diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                self.v("%s is described again (first in packet %d) with conflicting content "
                       "(fields: %s)" % (w, old.packet, ", ".join(diff)))
            return
        kind, name, pid, tid = "plain", td.name or td.static_name or td.atrace_name, None, None
        if td.HasField("process") and td.HasField("thread"):
            self.v("%s sets both process and thread" % w)
        if td.HasField("process"):
            kind = "process"
            if not td.process.HasField("pid"):
                self.v("%s: ProcessDescriptor.pid is missing: TP drops the descriptor" % w)
            pid = td.process.pid
            name = td.process.process_name
            if not name:
                self.v("%s: process track has an empty ProcessDescriptor.process_name" % w)
            prev = self.pid_uuid.setdefault(pid, u)
            if prev != u:
                self.v("%s: pid %d is already described by track uuid %d: TP treats a second "
                       "uuid as pid reuse" % (w, pid, prev))
        elif td.HasField("thread"):
            kind = "thread"
            if not td.thread.HasField("pid") or not td.thread.HasField("tid"):
                self.v("%s: ThreadDescriptor needs pid and tid: TP drops the descriptor" % w)
            pid, tid = td.thread.pid, td.thread.tid
            name = td.thread.thread_name
            if not name:
                self.v("%s: thread track has an empty ThreadDescriptor.thread_name" % w)
            prev = self.thread_uuid.setdefault((pid, tid), u)
            if prev != u:
                self.v("%s: (pid %d, tid %d) is already described by track uuid %d: TP treats a "
                       "second uuid as tid reuse" % (w, pid, tid, prev))
        elif td.HasField("counter"):
            kind = "counter"
            if not name:
                self.v("%s: counter track has no name (TrackDescriptor.name)" % w)
        if kind in ("process", "thread") and td.HasField("parent_uuid"):
            self.v("%s: a %s track must not have a parent_uuid (TP ignores it)" % (w, kind))
        if u == 0 and td.HasField("parent_uuid"):
            self.v("%s: the default track (uuid 0) may not have a parent" % w)
        self.tracks[u] = Track(uuid=u, packet=idx, seq=sid, desc=td, kind=kind, name=name,
                               pid=pid, tid=tid,
                               parent=td.parent_uuid if td.HasField("parent_uuid") else None,
                               unit=td.counter.unit_name if kind == "counter" else "")

    def finish_tracks(self) -> None:
        """Every parent_uuid is described; no loops; bounded depth."""
        for t in self.tracks.values():
            if t.parent is None or t.kind in ("process", "thread"):
                continue
            if t.parent not in self.tracks:
                self.v("packet %d (seq %d): TrackDescriptor uuid %d: parent_uuid %d is never "
                       "described (TP drops the track's events)" % (t.packet, t.seq, t.uuid, t.parent))
                continue
            seen = {t.uuid}
            cur = t
            while cur.parent is not None and cur.kind not in ("process", "thread"):
                cur = self.tracks.get(cur.parent)
                if cur is None:
                    break
                if cur.uuid in seen:
                    self.v("packet %d (seq %d): TrackDescriptor uuid %d: the parent_uuid chain "
                           "loops" % (t.packet, t.seq, t.uuid))
                    break
                seen.add(cur.uuid)
                if len(seen) > MAX_TRACK_DEPTH:
                    self.v("packet %d (seq %d): TrackDescriptor uuid %d: track hierarchy deeper "
                           "than %d" % (t.packet, t.seq, t.uuid, MAX_TRACK_DEPTH))
                    break

    def check_processes(self) -> None:
        if not any(t.kind == "process" for t in self.tracks.values()):
            self.v("trace: no process track (TrackDescriptor with a ProcessDescriptor): the UI "
                   "shows no process name")

    # -- track events ---------------------------------------------------------

    def track_event(self, pkt, seq: _Seq, idx: int, where: str, clock) -> None:
        te = pkt.track_event
        w = where + ": TrackEvent"
        # Rule 5: every TrackEvent packet has a timestamp.
        if not pkt.HasField("timestamp"):
            self.v("%s has no TracePacket.timestamp: TP drops it" % w)
        if te.HasField("track_uuid"):
            track = te.track_uuid
        elif (seq.defaults is not None and seq.defaults.HasField("track_event_defaults")
              and seq.defaults.track_event_defaults.HasField("track_uuid")):
            track = seq.defaults.track_event_defaults.track_uuid
        else:
            track = 0
        t = self.tracks.get(track)
        if t is None:
            self.v("%s uses track uuid %d, which no earlier TrackDescriptor describes "
                   "(descriptors must come before the events that use them)" % (w, track))
        typ = te.type
        if typ not in (TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER):
            self.v("%s has TrackEvent.type=%s, which devprof traces must not use"
                   % (w, TYPE_NAMES.get(typ, typ)))
            return
        is_counter_track = t is not None and t.kind == "counter"
        if typ == TYPE_COUNTER and t is not None and not is_counter_track:
            self.v("%s: TYPE_COUNTER event on track uuid %d, which is a %s track, not a counter "
                   "track (TP drops it)" % (w, track, t.kind))
        if typ != TYPE_COUNTER and is_counter_track:
            self.v("%s: %s event on counter track uuid %d %r: only TYPE_COUNTER events are "
                   "allowed on counter tracks" % (w, TYPE_NAMES[typ], track, t.name))

        name = None
        nf = te.WhichOneof("name_field")
        if nf == "name":
            name = te.name
        elif nf == "name_iid":
            name = self.lookup(seq, INTERN_EVENT_NAMES, te.name_iid, idx, w, "TrackEvent.name_iid")
        if name is None and nf is None and typ in (TYPE_SLICE_BEGIN, TYPE_INSTANT):
            self.v("%s: %s has neither name nor name_iid" % (w, TYPE_NAMES[typ]))
        for ciid in te.category_iids:
            self.lookup(seq, INTERN_EVENT_CATEGORIES, ciid, idx, w, "TrackEvent.category_iids")
        if te.WhichOneof("correlation_id_field") == "correlation_id_str_iid":
            self.lookup(seq, INTERN_CORRELATION_ID_STR, te.correlation_id_str_iid, idx, w,
                        "TrackEvent.correlation_id_str_iid")
        args: dict = {}
        for i, da in enumerate(te.debug_annotations):
            aname, aval = self.annotation(da, seq, idx, "%s.debug_annotations[%d]" % (w, i))
            if aname is None:
                continue
            if aname in args:
                self.v("%s: debug annotation %r appears twice" % (w, aname))
            args[aname] = aval

        ev = Event(packet=idx, seq=seq.id, type=typ, track=track, name=name, args=args,
                   flows=list(te.flow_ids) + list(te.flow_ids_old),
                   term=list(te.terminating_flow_ids) + list(te.terminating_flow_ids_old),
                   clock=clock)
        both = set(ev.flows) & set(ev.term)
        if both:
            self.v("%s: flow id(s) %s in both flow_ids and terminating_flow_ids"
                   % (w, sorted(both)))

        if typ == TYPE_COUNTER:
            cf = te.WhichOneof("counter_value_field")
            if cf is None:
                self.v("%s: TYPE_COUNTER event without counter_value or double_counter_value "
                       "(TP drops it)" % w)
            elif is_counter_track:
                ev.counter = self.counter_value(t, seq, getattr(te, cf))
        # Extra counter values (attached to any event type).
        for values, uuids_field, vfield in (
                (te.extra_counter_values, "extra_counter_track_uuids", "extra_counter_values"),
                (te.extra_double_counter_values, "extra_double_counter_track_uuids",
                 "extra_double_counter_values")):
            if not values:
                continue
            uuids = list(getattr(te, uuids_field))
            if not uuids and seq.defaults is not None:
                uuids = list(getattr(seq.defaults.track_event_defaults, uuids_field))
            if len(values) > len(uuids):
                self.v("%s: %d %s but only %d %s (TP drops the event)"
                       % (w, len(values), vfield, len(uuids), uuids_field))
                continue
            if len(values) > MAX_EXTRA_COUNTERS:
                self.v("%s: %d %s, more than TP's limit of %d"
                       % (w, len(values), vfield, MAX_EXTRA_COUNTERS))
            for u, val in zip(uuids, values):
                ct = self.tracks.get(u)
                if ct is None or ct.kind != "counter":
                    self.v("%s: %s uuid %d is not a counter track described earlier"
                           % (w, uuids_field, u))
                    continue
                ev.extra.append((u, self.counter_value(ct, seq, val)))
        self.events.append(ev)

    def counter_value(self, t: Track, seq: _Seq, val):
        cd = t.desc.counter
        if cd.unit_multiplier > 0:
            val = val * cd.unit_multiplier
        if cd.is_incremental:
            val = seq.counter_acc.get(t.uuid, 0) + val
            seq.counter_acc[t.uuid] = val
        return val

    def annotation(self, da, seq: _Seq, idx: int, w: str):
        nf = da.WhichOneof("name_field")
        name = None
        if nf == "name":
            name = da.name
        elif nf == "name_iid":
            name = self.lookup(seq, INTERN_DEBUG_ANNOTATION_NAMES, da.name_iid, idx, w,
                               "DebugAnnotation.name_iid")
        elif nf is None:
            self.v("%s has neither name nor name_iid" % w)
        return name, self.annotation_value(da, seq, idx, w)

    def annotation_value(self, da, seq: _Seq, idx: int, w: str):
        if da.WhichOneof("proto_type_descriptor") == "proto_type_name_iid":
            self.lookup(seq, INTERN_DEBUG_ANNOTATION_VALUE_TYPE_NAMES, da.proto_type_name_iid,
                        idx, w, "DebugAnnotation.proto_type_name_iid")
        vf = da.WhichOneof("value")
        if vf == "string_value_iid":
            s = self.lookup(seq, INTERN_DEBUG_ANNOTATION_STRING_VALUES, da.string_value_iid, idx,
                            w, "DebugAnnotation.string_value_iid")
            return ("string", s, vf)
        if vf in ARG_TYPES:
            return (ARG_TYPES[vf], getattr(da, vf), vf)
        if vf is not None:
            return (vf.replace("_value", ""), getattr(da, vf), vf)
        if da.dict_entries:
            d = {}
            for i, e in enumerate(da.dict_entries):
                n, val = self.annotation(e, seq, idx, "%s.dict_entries[%d]" % (w, i))
                d[n] = val
            return ("dict", d, "dict_entries")
        if da.array_values:
            return ("array", [self.annotation_value(e, seq, idx, "%s.array_values[%d]" % (w, i))
                              for i, e in enumerate(da.array_values)], "array_values")
        if da.HasField("nested_value"):
            return ("nested", None, "nested_value")
        return ("none", None, "no value")

    # -- pass 2: slices, counters, flows -------------------------------------

    def build_slices(self) -> None:
        # Rule 3, reported now that later definitions are known.
        for seq, table, iid, idx, where, field, gen in self.pending_iids:
            tname = INTERN_TABLES[table][0]
            later = seq.defs_all.get((table, iid))
            if later is not None and later > idx:
                hint = ("it is defined later, in packet %d: interned data must come before "
                        "its first use" % later)
            elif later is not None:
                hint = ("it was defined in packet %d, but the sequence's incremental state was "
                        "cleared (or never valid) since" % later)
            else:
                hint = "it is never defined on this sequence"
            self.v("%s: %s=%d is not defined in InternedData.%s on sequence %d since its last "
                   "clear (%s)" % (where, field, iid, tname, seq.id, hint))

        by_track: dict[int, list[Event]] = {}
        for ev in self.events:
            if ev.ts is None:
                continue
            if ev.type == TYPE_COUNTER:
                if ev.counter is not None:
                    self.counter_samples.setdefault(ev.track, []).append((ev.ts, ev.counter))
            else:
                by_track.setdefault(ev.track, []).append(ev)
            for u, val in ev.extra:
                self.counter_samples.setdefault(u, []).append((ev.ts, val))
        for lst in self.counter_samples.values():
            lst.sort(key=lambda s: s[0])

        ev_slice: dict[int, Slice] = {}      # id(event) -> slice it opens/closes/is
        for track, evs in by_track.items():
            t = self.tracks.get(track)
            if t is not None and t.kind == "counter":
                continue
            evs.sort(key=lambda e: (e.ts, e.packet))
            stack: list[Slice] = []
            for ev in evs:
                w = "packet %d (seq %d): TrackEvent" % (ev.packet, ev.seq)
                top = stack[-1] if stack else None
                if ev.type == TYPE_SLICE_END:
                    if top is None:
                        self.v("%s: TYPE_SLICE_END at ts %d on track uuid %d with no open slice "
                               "on that track (TP ignores it)" % (w, ev.ts, track))
                        continue
                    if ev.name is not None and ev.name != top.name:
                        self.v("%s: TYPE_SLICE_END named %r does not match the innermost open "
                               "slice %r (%s) on track uuid %d"
                               % (w, ev.name, top.name, top.where(), track))
                    stack.pop()
                    top.end_ev = ev
                    top.dur = ev.ts - top.ts
                    if top.dur < 0:       # cannot happen after sorting; kept as a guard
                        self.v("%s: slice %r ends before it begins" % (w, top.name))
                    for k, val in ev.args.items():
                        if k in top.args:
                            self.v("%s: debug annotation %r on both BEGIN and END of slice %r"
                                   % (w, k, top.name))
                        top.args[k] = val
                    ev_slice[id(ev)] = top
                    continue
                s = Slice(name=ev.name, ts=ev.ts, kind="span" if ev.type == TYPE_SLICE_BEGIN
                          else "instant", track=track, begin=ev, depth=len(stack),
                          stack_parent=top, args=dict(ev.args))
                ev_slice[id(ev)] = s
                if len(stack) >= MAX_SLICE_DEPTH:
                    self.v("%s: slice %r nests deeper than %d on track uuid %d (TP drops it)"
                           % (w, ev.name, MAX_SLICE_DEPTH, track))
                if ev.type == TYPE_SLICE_BEGIN:
                    stack.append(s)
                    self.r.spans.append(s)
                else:
                    s.dur = 0
                    self.r.instants.append(s)
            for s in stack:
                self.v("%s: slice %r begun at ts %d on track uuid %d is never ended "
                       "(TP keeps it with dur -1, 'Did not end')"
                       % (s.where(), s.name, s.ts, track))
        self.build_flows(ev_slice)

    def build_flows(self, ev_slice: dict) -> None:
        occ = [ev for ev in self.events if (ev.flows or ev.term) and id(ev) in ev_slice]
        occ.sort(key=lambda e: (e.ts, e.packet))
        active: dict[int, tuple] = {}        # flow id -> (slice, event)
        for ev in occ:
            s = ev_slice[id(ev)]
            w = "packet %d (seq %d): TrackEvent" % (ev.packet, ev.seq)
            for fid in ev.flows:
                prev = active.get(fid)
                if prev is not None:
                    self.r.flows.append((prev[0], s, fid))
                active[fid] = (s, ev)
            for fid in ev.term:
                prev = active.pop(fid, None)
                if prev is None:
                    self.v("%s: terminating_flow_ids %d on slice %r has no earlier event with "
                           "that id in flow_ids (TP ignores it)" % (w, fid, s.name))
                    continue
                src, src_ev = prev
                if ev.type != TYPE_SLICE_BEGIN:
                    self.v("%s: terminating_flow_ids %d on a %s event; devprof links displaced "
                           "children from their BEGIN" % (w, fid, TYPE_NAMES[ev.type]))
                    continue
                if src.kind != "span" or src_ev.type != TYPE_SLICE_BEGIN:
                    self.v("%s: terminating flow %d on slice %r starts at %s %r, not at a "
                           "span's BEGIN" % (w, fid, s.name, TYPE_NAMES[src_ev.type], src.name))
                    continue
                if s.stack_parent is not None:
                    self.v("%s: terminating flow %d links slice %r to %r, but %r already has a "
                           "parent on its own track (%r): only the first slice of a track "
                           "stack (a displaced child) may be linked to a parent"
                           % (w, fid, s.name, src.name, s.name, s.stack_parent.name))
                    continue
                if s.link_parent is not None:
                    self.v("%s: slice %r has more than one terminating flow (parents %r and %r)"
                           % (w, s.name, s.link_parent.name, src.name))
                    continue
                s.link_parent = src
                self.r.parent_links.append((src, s, fid))


# ---------------------------------------------------------------------------
# Manifest comparison.

def load_manifest(path: str) -> dict:
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def _int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _validate_manifest(m: Any) -> list[str]:
    errs = []
    if not isinstance(m, dict):
        return ["manifest: top level must be a JSON object"]
    for k in MANIFEST_KEYS_REQUIRED:
        if k not in m:
            errs.append("manifest: required key %r is missing" % k)
    for k in m:
        if k not in MANIFEST_KEYS_REQUIRED and k not in MANIFEST_KEYS_OPTIONAL \
                and not k.startswith("_"):
            errs.append("manifest: unknown key %r" % k)
    if "dropped" in m and not (_int(m["dropped"]) and m["dropped"] >= 0):
        errs.append("manifest: dropped must be an integer >= 0")
    if "process_name" in m and not isinstance(m["process_name"], str):
        errs.append("manifest: process_name must be a string")

    def check_args(args, where):
        if not isinstance(args, dict):
            errs.append("%s.args must be an object" % where)
            return
        for k, a in args.items():
            w = "%s.args[%r]" % (where, k)
            if not isinstance(a, dict) or set(a) != {"type", "value"}:
                errs.append("%s must be {\"type\": ..., \"value\": ...}" % w)
                continue
            t, val = a["type"], a["value"]
            ok = {"int": _int(val) and -(1 << 63) <= val < (1 << 63),
                  "uint": _int(val) and 0 <= val < (1 << 64),
                  "double": _num(val),
                  "bool": isinstance(val, bool),
                  "string": isinstance(val, str)}.get(t)
            if ok is None:
                errs.append("%s.type %r is not one of %s" % (w, t, ", ".join(MANIFEST_ARG_TYPES)))
            elif not ok:
                errs.append("%s.value %r is not a valid %s" % (w, val, t))

    for kind, keys in (("spans", ("name", "ts", "dur", "parent")), ("instants", ("name", "ts"))):
        lst = m.get(kind, [])
        if not isinstance(lst, list):
            errs.append("manifest: %s must be a list" % kind)
            continue
        for i, s in enumerate(lst):
            w = "manifest: %s[%d]" % (kind, i)
            if not isinstance(s, dict):
                errs.append("%s must be an object" % w)
                continue
            for k in keys:
                if k not in s:
                    errs.append("%s lacks %r" % (w, k))
            extra = set(s) - set(keys) - {"args"}
            if extra:
                errs.append("%s has unknown keys %s" % (w, sorted(extra)))
            if not isinstance(s.get("name"), str):
                errs.append("%s.name must be a string" % w)
            for k in ("ts", "dur"):
                if k in keys and k in s and not _int(s[k]):
                    errs.append("%s.%s must be an integer (ns), got %r" % (w, k, s[k]))
            if kind == "spans" and "parent" in s and s["parent"] is not None \
                    and not isinstance(s["parent"], str):
                errs.append("%s.parent must be a string or null" % w)
            check_args(s.get("args", {}), w)
    counters = m.get("counters", [])
    if not isinstance(counters, list):
        errs.append("manifest: counters must be a list")
        counters = []
    for i, c in enumerate(counters):
        w = "manifest: counters[%d]" % i
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) \
                or not isinstance(c.get("unit", ""), str) or not isinstance(c.get("samples"), list):
            errs.append("%s must be {\"name\": str, \"unit\": str, \"samples\": [[ts, value], ...]}" % w)
            continue
        for j, smp in enumerate(c["samples"]):
            if not (isinstance(smp, list) and len(smp) == 2 and _num(smp[1])):
                errs.append("%s.samples[%d] must be [ts, value]" % (w, j))
            elif not _int(smp[0]):
                errs.append("%s.samples[%d] ts %r must be an integer number of ns "
                            "(a float64 loses precision at BOOTTIME magnitudes)" % (w, j, smp[0]))
    flows = m.get("flows", [])
    if not isinstance(flows, list) or not all(
            isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
            for f in flows):
        errs.append("manifest: flows must be a list of [source name, destination name]")
    es = m.get("extra_slices", [])
    if not isinstance(es, list) or not all(isinstance(x, str) for x in es):
        errs.append("manifest: extra_slices must be a list of names")
    return errs


def _freeze_args(args: dict) -> tuple:
    out = []
    for k, a in args.items():
        t, val = a[0], a[1]
        if t == "double":
            val = float(val)
        elif isinstance(val, (dict, list)):
            val = repr(val)
        out.append((k, t, val))
    return tuple(sorted(out, key=lambda x: x[0]))


def _manifest_args(args: dict) -> dict:
    return {k: (a["type"], a["value"], None) for k, a in (args or {}).items()}


def _arg_diffs(targs: dict, margs: dict) -> list[str]:
    d = []
    for k in sorted(set(targs) | set(margs)):
        if k not in targs:
            d.append("arg %r missing (manifest %s %r)" % (k, margs[k][0], margs[k][1]))
            continue
        if k not in margs:
            d.append("unexpected arg %r = %s %r" % (k, targs[k][0], targs[k][1]))
            continue
        tt, tv, tf = targs[k]
        mt, mv, _ = margs[k]
        if tt != mt:
            d.append("arg %r type %s (DebugAnnotation.%s) != manifest %s" % (k, tt, tf, mt))
        elif (float(tv) != float(mv)) if tt == "double" else (tv != mv):
            d.append("arg %r value %r != manifest %r" % (k, tv, mv))
    return d


def _pname(s: Optional[Slice]) -> Optional[str]:
    return None if s is None else s.name


DETAIL_LIMIT = 50   # per kind: mismatches diagnosed in detail before only counting


def _match(kind: str, trace_items: list, man_items: list, key_t, key_m, diff, desc_t, desc_m,
           report, exempt: Callable[[Slice], bool]) -> None:
    """Multiset comparison of trace slices against manifest entries.

    Exact matches are paired first. Each unmatched manifest entry is then
    paired with the nearest unmatched trace slice of the same name (fewest
    differing fields, then closest ts) and the differences are reported; the
    rest are reported as missing or extra. Trace slices for which exempt()
    is true (extra_slices, the drop marker) are never reported as extra.
    """
    pool: dict = collections.defaultdict(list)
    for s in trace_items:
        pool[key_t(s)].append(s)
    missing = []
    for i, m in enumerate(man_items):
        k = key_m(m)
        if pool.get(k):
            pool[k].pop()
        else:
            missing.append((i, m))
    by_name: dict = collections.defaultdict(list)
    for lst in pool.values():
        for s in lst:
            by_name[s.name].append(s)
    used: set = set()
    plural = kind + "s"
    for n, (i, m) in enumerate(missing):
        if n == DETAIL_LIMIT:
            report("... and %d more manifest %s not found in the trace"
                   % (len(missing) - DETAIL_LIMIT, plural))
            break
        cands = [s for s in by_name.get(m["name"], []) if id(s) not in used]
        if not cands:
            report("%s %r (manifest %s[%d], %s) is missing from the trace"
                   % (kind, m["name"], plural, i, desc_m(m)))
            continue
        best = min(cands, key=lambda s: (len(diff(s, m)), abs(s.ts - m["ts"])))
        used.add(id(best))
        report("%s %r (manifest %s[%d]) does not match the trace: the nearest slice with that "
               "name (%s) has %s" % (kind, m["name"], plural, i, best.where(),
                                     "; ".join(diff(best, m))))
    extra = [s for lst in by_name.values() for s in lst if id(s) not in used and not exempt(s)]
    extra.sort(key=lambda s: (s.ts, s.begin.packet))
    for s in extra[:DETAIL_LIMIT]:
        report("trace has a%s %s %r (%s, %s) that the manifest does not list"
               % ("n" if kind[0] in "aeiou" else "", kind, s.name, s.where(), desc_t(s)))
    if len(extra) > DETAIL_LIMIT:
        report("... and %d more trace %s that the manifest does not list"
               % (len(extra) - DETAIL_LIMIT, plural))


def compare_manifest(res: Result, m: dict) -> None:
    errs = _validate_manifest(m)
    if errs:
        res.violations.extend(errs)
        return
    res.manifest_checked = True
    v = res.violations.append
    procs = [t.name for t in res.tracks.values() if t.kind == "process"]
    if m["process_name"] not in procs:
        v("manifest: process_name %r is not the name of any process track (trace has %s)"
          % (m["process_name"], procs))

    dropped = m["dropped"]
    allowed = set(m.get("extra_slices", []))
    drop_marker = None
    if dropped > 0:
        num = re.compile(r"(?<!\d)%d(?!\d)" % dropped)
        for s in res.instants:
            a = s.args.get("dropped_events")
            if s.name and s.name.startswith("devprof:") and num.search(s.name) \
                    and a is not None and a[0] == "int" and a[1] == dropped:
                drop_marker = s
                break
        if drop_marker is None:
            v("manifest: dropped=%d but the trace has no INSTANT named 'devprof: ...%d...' with an "
              "int debug annotation dropped_events=%d: the user cannot see the loss"
              % (dropped, dropped, dropped))

    def exempt(s: Slice) -> bool:
        return s.name in allowed or s is drop_marker

    spans = [s for s in res.spans if s.dur is not None]
    _match("span", spans, m["spans"],
           key_t=lambda s: (s.name, s.ts, s.dur, _pname(s.parent), _freeze_args(s.args)),
           key_m=lambda x: (x["name"], x["ts"], x["dur"], x["parent"],
                            _freeze_args(_manifest_args(x.get("args")))),
           diff=lambda s, x: (
               (["ts %d != manifest %d" % (s.ts, x["ts"])] if s.ts != x["ts"] else [])
               + (["dur %d != manifest %d" % (s.dur, x["dur"])] if s.dur != x["dur"] else [])
               + (["parent %r != manifest %r" % (_pname(s.parent), x["parent"])]
                  if _pname(s.parent) != x["parent"] else [])
               + _arg_diffs(s.args, _manifest_args(x.get("args")))),
           desc_t=lambda s: "ts=%d, dur=%d, parent %r" % (s.ts, s.dur, _pname(s.parent)),
           desc_m=lambda x: "ts=%d, dur=%d, parent %r" % (x["ts"], x["dur"], x["parent"]),
           report=v, exempt=exempt)
    _match("instant", res.instants, m["instants"],
           key_t=lambda s: (s.name, s.ts, _freeze_args(s.args)),
           key_m=lambda x: (x["name"], x["ts"], _freeze_args(_manifest_args(x.get("args")))),
           diff=lambda s, x: ((["ts %d != manifest %d" % (s.ts, x["ts"])] if s.ts != x["ts"] else [])
                              + _arg_diffs(s.args, _manifest_args(x.get("args")))),
           desc_t=lambda s: "ts=%d" % s.ts, desc_m=lambda x: "ts=%d" % x["ts"], report=v,
           exempt=exempt)

    # Counters, keyed by (track name, unit_name).
    tcount: dict = {}
    for u, samples in res.counters.items():
        t = res.tracks.get(u)
        if t is None or t.kind != "counter":
            continue
        tcount.setdefault((t.name, t.unit), []).extend(samples)
    seen = set()
    for i, c in enumerate(m["counters"]):
        key = (c["name"], c.get("unit", ""))
        seen.add(key)
        if key not in tcount:
            units = [k[1] for k in tcount if k[0] == c["name"]]
            if units:
                v("counter %r (manifest counters[%d]): the trace's counter track has unit_name %s "
                  "!= manifest %r" % (c["name"], i, " / ".join(repr(x) for x in units), key[1]))
                for un in units:
                    seen.add((c["name"], un))
            else:
                v("counter %r (manifest counters[%d], %d samples) has no counter track in the trace"
                  % (c["name"], i, len(c["samples"])))
            continue
        want = collections.Counter((s[0], s[1]) for s in c["samples"])
        got = collections.Counter(tcount[key])
        miss = sorted((want - got).elements())
        extra = sorted((got - want).elements())
        for what, lst in (("missing from the trace", miss), ("in the trace but not the manifest", extra)):
            for ts, val in lst[:10]:
                v("counter %r: sample (ts %d, value %r) %s" % (c["name"], ts, val, what))
            if len(lst) > 10:
                v("counter %r: ... and %d more samples %s" % (c["name"], len(lst) - 10, what))
    for key, samples in tcount.items():
        if key not in seen and samples:
            v("trace has counter track %r (unit_name %r) with %d samples that the manifest does "
              "not list" % (key[0], key[1], len(samples)))

    want = collections.Counter(tuple(f) for f in m["flows"])
    got = collections.Counter((a.name, b.name) for a, b, _ in res.flows)
    for (a, b), n in sorted((want - got).items()):
        v("flow %r -> %r (x%d) is in the manifest but not in the trace" % (a, b, n))
    for (a, b), n in sorted((got - want).items()):
        v("trace has flow %r -> %r (x%d) that the manifest does not list" % (a, b, n))


# ---------------------------------------------------------------------------
# Entry points.

def check_bytes(raw: bytes, manifest: Optional[dict] = None, path: str = "<bytes>") -> Result:
    try:
        data, container = decode_container(raw)
        data, inflated = expand_compressed(data) if data else (data, 0)
    except TraceFormatError as e:
        r = Result(path=path, container="?", size=len(raw))
        r.violations.append(str(e))
        return r
    if inflated:
        container += ", %d compressed_packets inflated" % inflated
    res = Checker(data, path, container).run()
    if manifest is not None:
        compare_manifest(res, manifest)
    return res


def check_file(path: str, manifest: Optional[dict] = None) -> Result:
    with open(path, "rb") as f:
        raw = f.read()
    return check_bytes(raw, manifest, path)


def format_violations(res: Result, limit: Optional[int] = None) -> str:
    vs = res.violations if limit is None else res.violations[:limit]
    out = ["  %d. %s" % (i + 1, m) for i, m in enumerate(vs)]
    if limit is not None and len(res.violations) > limit:
        out.append("  ... and %d more" % (len(res.violations) - limit))
    return "\n".join(out)


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(
        description="Check a Perfetto trace written by devprof against the official schema "
                    "and trace_processor's import rules.")
    ap.add_argument("trace", help="a .pftrace file (raw protobuf or whole-file gzip)")
    ap.add_argument("--expect", metavar="MANIFEST.json",
                    help="manifest of what the session recorded (the contract is in this "
                         "file's docstring)")
    ap.add_argument("--limit", type=int, default=0,
                    help="print at most this many violations (default 0: all)")
    a = ap.parse_args(argv)
    manifest = None
    if a.expect:
        try:
            manifest = load_manifest(a.expect)
        except (OSError, ValueError) as e:
            print("perfetto_check: cannot read manifest %s: %s" % (a.expect, e), file=sys.stderr)
            return 2
    try:
        res = check_file(a.trace, manifest)
    except OSError as e:
        print("perfetto_check: cannot read %s: %s" % (a.trace, e), file=sys.stderr)
        return 2
    print(res.summary())
    if res.violations:
        print("FAIL: %s: %d violation(s):" % (a.trace, len(res.violations)))
        print(format_violations(res, a.limit or None))
        return 1
    print("OK: %s conforms%s" % (a.trace, " to %s" % a.expect if a.expect else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
