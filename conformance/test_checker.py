"""Self-tests of perfetto_check: no Go needed.

A fully valid trace is built with the official generated schema; it must
pass with a matching manifest. Every other test breaks exactly one rule and
asserts that the checker reports that specific violation: a checker test
that cannot fail is worthless.
"""

import copy
import gzip
import json
import os
import subprocess
import sys
import zlib

import pytest

import perfetto_check as pc
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

B0 = 5_000_000_000_000          # BOOTTIME ns of the clock snapshot
R0 = 1_763_000_000_000_000_000  # REALTIME ns at the same instant
M0 = 4_999_000_000_000          # MONOTONIC ns at the same instant
PARENT_LINK = (1 << 63) | 42    # flow id linking the displaced child to its parent
USER_FLOW = 7

PROCESS, THREAD, ROW, COUNTER = 1, 2, 3, 4
META_SEQ, THREAD_SEQ, ROW_SEQ = 1, 2, 3


# ---------------------------------------------------------------------------
# Trace building helpers.

varint = pc.varint_bytes


def field_bytes(num: int, wire: int, payload: bytes) -> bytes:
    """One raw protobuf field: tag, then payload (length-prefixed for wire 2)."""
    if wire == 2:
        payload = varint(len(payload)) + payload
    return varint(num << 3 | wire) + payload


class TraceBuilder:
    """Collects TracePackets (pb messages, or raw bytes for hand-made ones)."""

    def __init__(self):
        self.packets = []

    def packet(self, seq, ts=None, flags=None, **fields):
        p = pb.TracePacket()
        if seq is not None:
            p.trusted_packet_sequence_id = seq
        if ts is not None:
            p.timestamp = ts
        if flags is not None:
            p.sequence_flags = flags
        for k, v in fields.items():
            getattr(p, k).CopyFrom(v)
        self.packets.append(p)
        return p

    def event(self, seq, ts, typ, track=None, name=None, name_iid=None, flags=2, **te_fields):
        te = pb.TrackEvent(type=typ)
        if track is not None:
            te.track_uuid = track
        if name is not None:
            te.name = name
        if name_iid is not None:
            te.name_iid = name_iid
        for k, v in te_fields.items():
            if isinstance(v, list):
                getattr(te, k).extend(v)
            else:
                setattr(te, k, v)
        return self.packet(seq, ts=ts, flags=flags, track_event=te)

    def bytes(self) -> bytes:
        out = bytearray()
        for p in self.packets:
            raw = p if isinstance(p, (bytes, bytearray)) else p.SerializeToString()
            out += field_bytes(1, 2, raw)
        return bytes(out)


def annotation(name=None, name_iid=None, **value):
    da = pb.DebugAnnotation()
    if name is not None:
        da.name = name
    if name_iid is not None:
        da.name_iid = name_iid
    for k, v in value.items():
        setattr(da, k, v)
    return da


def interned(**tables):
    """interned(event_names=[(1, "step")], debug_annotation_string_values=[(1, b"x")])."""
    idata = pb.InternedData()
    for table, entries in tables.items():
        for iid, val in entries:
            e = getattr(idata, table).add()
            e.iid = iid
            if isinstance(val, bytes):
                e.str = val
            else:
                e.name = val
    return idata


def clock_snapshot(*clocks):
    cs = pb.ClockSnapshot()
    for c in clocks:
        clk = cs.clocks.add()
        clk.clock_id = c[0]
        clk.timestamp = c[1]
        if len(c) > 2:
            clk.is_incremental = c[2]
    return cs


def track(uuid, name=None, parent=None, process=None, thread=None, counter_unit=None):
    td = pb.TrackDescriptor(uuid=uuid)
    if name is not None:
        td.name = name
    if parent is not None:
        td.parent_uuid = parent
    if process is not None:
        td.process.pid, td.process.process_name = process
    if thread is not None:
        td.thread.pid, td.thread.tid, td.thread.thread_name = thread
    if counter_unit is not None:
        td.counter.SetInParent()
        if counter_unit:
            td.counter.unit_name = counter_unit
    return td


def arg(t, v):
    return {"type": t, "value": v}


def valid_trace():
    """A valid trace using every feature devprof uses, with its manifest.

    Returns (builder, manifest, handles); handles name the packets that tests
    break.
    """
    tb = TraceBuilder()
    h = {}
    # Sequence 1: clock snapshot and descriptors.
    h["snapshot"] = tb.packet(META_SEQ, flags=1, clock_snapshot=clock_snapshot(
        (pc.BOOTTIME, B0), (pc.REALTIME, R0), (3, M0)))
    h["process"] = tb.packet(META_SEQ, ts=B0, flags=2, track_descriptor=track(
        PROCESS, process=(100, "devprof.test")))
    h["thread"] = tb.packet(META_SEQ, ts=B0, flags=2, track_descriptor=track(
        THREAD, thread=(100, 101, "main")))
    h["row"] = tb.packet(META_SEQ, ts=B0, flags=2, track_descriptor=track(
        ROW, name="lane 1", parent=PROCESS))
    h["counter"] = tb.packet(META_SEQ, ts=B0, flags=2, track_descriptor=track(
        COUNTER, name="loss", parent=PROCESS, counter_unit="%"))

    # Sequence 2: the thread track, absolute BOOTTIME timestamps, interning.
    defaults = pb.TracePacketDefaults()
    defaults.track_event_defaults.track_uuid = THREAD
    h["thread_first"] = tb.packet(
        THREAD_SEQ, flags=3, trace_packet_defaults=defaults,
        interned_data=interned(
            event_names=[(1, "step"), (2, "forward")],
            event_categories=[(1, "host")],
            debug_annotation_names=[(1, "batch"), (2, "phase")],
            debug_annotation_string_values=[(1, b"train")]))
    h["step_begin"] = tb.event(
        THREAD_SEQ, B0 + 1000, pc.TYPE_SLICE_BEGIN, name_iid=1, category_iids=[1],
        flow_ids=[USER_FLOW, PARENT_LINK],
        debug_annotations=[annotation(name_iid=1, int_value=32)])
    h["forward_begin"] = tb.event(
        THREAD_SEQ, B0 + 2000, pc.TYPE_SLICE_BEGIN, name_iid=2,
        debug_annotations=[annotation(name_iid=2, string_value_iid=1)])
    h["checkpoint"] = tb.event(THREAD_SEQ, B0 + 2500, pc.TYPE_INSTANT, name="checkpoint")
    h["forward_end"] = tb.event(THREAD_SEQ, B0 + 3000, pc.TYPE_SLICE_END)
    h["step_end"] = tb.event(THREAD_SEQ, B0 + 9000, pc.TYPE_SLICE_END)
    h["loss1"] = tb.event(THREAD_SEQ, B0 + 1200, pc.TYPE_COUNTER, track=COUNTER,
                          double_counter_value=0.25)
    h["loss2"] = tb.event(THREAD_SEQ, B0 + 1300, pc.TYPE_COUNTER, track=COUNTER, counter_value=1)

    # Sequence 3: the row of the displaced child, on incremental clock 64.
    defaults = pb.TracePacketDefaults(timestamp_clock_id=64)
    defaults.track_event_defaults.track_uuid = ROW
    h["row_first"] = tb.packet(
        ROW_SEQ, flags=3, trace_packet_defaults=defaults,
        interned_data=interned(event_names=[(1, "data_load")],
                               debug_annotation_names=[(1, "bytes")]),
        clock_snapshot=clock_snapshot((pc.BOOTTIME, B0), (64, 0, True)))
    h["load_begin"] = tb.event(
        ROW_SEQ, 1500, pc.TYPE_SLICE_BEGIN, name_iid=1, terminating_flow_ids=[PARENT_LINK],
        debug_annotations=[annotation(name_iid=1, uint_value=4096),
                           annotation(name="ratio", double_value=0.5),
                           annotation(name="cached", bool_value=True)])
    h["load_end"] = tb.event(ROW_SEQ, 4500, pc.TYPE_SLICE_END)          # B0 + 6000
    h["consumer_begin"] = tb.event(ROW_SEQ, 1000, pc.TYPE_SLICE_BEGIN,  # B0 + 7000
                                   name="consumer", flow_ids=[USER_FLOW])
    h["consumer_end"] = tb.event(ROW_SEQ, 500, pc.TYPE_SLICE_END)       # B0 + 7500

    manifest = {
        "trace": "valid.pftrace",
        "process_name": "devprof.test",
        "dropped": 0,
        "spans": [
            {"name": "step", "ts": B0 + 1000, "dur": 8000, "parent": None,
             "args": {"batch": arg("int", 32)}},
            {"name": "forward", "ts": B0 + 2000, "dur": 1000, "parent": "step",
             "args": {"phase": arg("string", "train")}},
            {"name": "data_load", "ts": B0 + 1500, "dur": 4500, "parent": "step",
             "args": {"bytes": arg("uint", 4096), "ratio": arg("double", 0.5),
                      "cached": arg("bool", True)}},
            {"name": "consumer", "ts": B0 + 7000, "dur": 500, "parent": None, "args": {}},
        ],
        "instants": [{"name": "checkpoint", "ts": B0 + 2500, "args": {}}],
        "counters": [{"name": "loss", "unit": "%",
                      "samples": [[B0 + 1200, 0.25], [B0 + 1300, 1]]}],
        "flows": [["step", "consumer"]],
    }
    return tb, manifest, h


def check(tb, manifest=None):
    return pc.check_bytes(tb.bytes() if isinstance(tb, TraceBuilder) else tb, manifest)


def assert_reports(res, *fragments):
    """Asserts that one violation contains all the fragments."""
    for v in res.violations:
        if all(f in v for f in fragments):
            return v
    pytest.fail("no violation contains %r; got:\n%s" % (fragments, pc.format_violations(res)))


def move_to_end(tb, p):
    tb.packets.remove(p)
    tb.packets.append(p)


# ---------------------------------------------------------------------------
# The valid trace.

def test_valid_trace_passes_with_manifest():
    tb, m, _ = valid_trace()
    res = check(tb, m)
    assert res.violations == [], pc.format_violations(res)
    assert res.manifest_checked
    assert len(res.spans) == 4 and len(res.instants) == 1
    assert len(res.flows) == 1 and len(res.parent_links) == 1
    assert res.first_ts == B0 + 1000 and res.last_ts == B0 + 9000


def test_valid_trace_model():
    tb, _, _ = valid_trace()
    res = check(tb)
    assert res.ok, pc.format_violations(res)
    spans = {s.name: s for s in res.spans}
    # The incremental clock 64 resolves through the snapshot on its sequence.
    assert spans["data_load"].ts == B0 + 1500 and spans["data_load"].dur == 4500
    assert spans["consumer"].ts == B0 + 7000 and spans["consumer"].dur == 500
    # Parents: on the stack, and through the terminating flow.
    assert spans["forward"].stack_parent is spans["step"]
    assert spans["data_load"].stack_parent is None
    assert spans["data_load"].link_parent is spans["step"]
    assert spans["consumer"].parent is None
    assert spans["forward"].args["phase"] == ("string", "train", "string_value_iid")
    assert res.counters[COUNTER] == [(B0 + 1200, 0.25), (B0 + 1300, 1)]
    assert [(a.name, b.name) for a, b, _ in res.flows] == [("step", "consumer")]
    assert "violations: 0" in res.summary()


def test_gzip_is_read_transparently():
    tb, m, _ = valid_trace()
    res = check(gzip.compress(tb.bytes()), m)
    assert res.ok, pc.format_violations(res)
    assert res.container.startswith("gzip")


def compressed(packets: bytes, compress=zlib.compress) -> bytes:
    """One TracePacket holding packets (framed) in compressed_packets."""
    return field_bytes(1, 2, field_bytes(50, 2, compress(packets)))


def test_compressed_packets_are_checked_in_place():
    # devprof's writer puts its packets in compressed_packets batches; TP
    # inflates each in place. Split the valid trace into a bare head, then
    # two compressed batches (zlib, and gzip headers, which TP also takes).
    tb, m, _ = valid_trace()
    data = tb.bytes()
    frames = pc.split_packets(data)
    cut = lambda i: frames[i][0] - 1 - len(varint(frames[i][1] - frames[i][0]))
    a, b = cut(2), cut(len(frames) // 2)
    wrapped = data[:a] + compressed(data[a:b]) + compressed(data[b:], gzip.compress)
    res = check(wrapped, m)
    assert res.ok, pc.format_violations(res)
    assert "2 compressed_packets inflated" in res.container
    assert res.packets == len(frames)
    # What is inside is checked as any packet: break the manifest's first
    # span and the violation still names it.
    m["spans"][0]["ts"] += 1
    assert not check(wrapped, m).ok


def test_compressed_packets_broken():
    tb, _, _ = valid_trace()
    data = tb.bytes()
    z = zlib.compress(data)
    assert_reports(check(field_bytes(1, 2, field_bytes(50, 2, z[:len(z) // 2]))),
                   "packet 0", "end before their zlib stream")
    assert_reports(check(field_bytes(1, 2, field_bytes(50, 2, b"\x78\x9c" + b"\xff" * 20))),
                   "packet 0", "do not inflate")
    assert_reports(check(field_bytes(1, 2, field_bytes(50, 2, z + b"xx"))),
                   "2 bytes after the zlib stream")
    assert_reports(check(compressed(compressed(data))), "compressed_packets inside compressed_packets")
    assert_reports(check(compressed(b"\x12\x01x")), "inside compressed_packets", "holds field 2")
    assert_reports(check(field_bytes(1, 2, field_bytes(10, 0, varint(1)) + field_bytes(50, 2, z))),
                   "compressed_packets must be the packet's only field")
    assert_reports(check(field_bytes(1, 2, field_bytes(133, 2, b"\x28\xb5\x2f\xfd"))),
                   "zstd_compressed_packets are not supported")


def test_cli_exit_codes(tmp_path):
    tb, m, h = valid_trace()
    trace = tmp_path / "valid.pftrace"
    trace.write_bytes(tb.bytes())
    man = tmp_path / "valid.expect.json"
    man.write_text(json.dumps(m))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perfetto_check.py")
    ok = subprocess.run([sys.executable, script, str(trace), "--expect", str(man)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "OK:" in ok.stdout and "spans" in ok.stdout
    m["spans"][0]["ts"] += 1
    man.write_text(json.dumps(m))
    bad = subprocess.run([sys.executable, script, str(trace), "--expect", str(man)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "FAIL:" in bad.stdout and "ts %d != manifest %d" % (B0 + 1000, B0 + 1001) in bad.stdout
    missing = subprocess.run([sys.executable, script, str(tmp_path / "nope.pftrace")],
                             capture_output=True, text=True)
    assert missing.returncode == 2


# ---------------------------------------------------------------------------
# Rule 1-3: sequences, incremental state, interning.

def test_sequence_id_zero():
    tb, _, h = valid_trace()
    h["counter"].ClearField("trusted_packet_sequence_id")
    res = check(tb)
    assert_reports(res, "packet 4 (seq 0)", "trusted_packet_sequence_id is missing or 0")


def test_missing_clear_flag():
    tb, _, h = valid_trace()
    h["thread_first"].sequence_flags = 2
    res = check(tb)
    assert_reports(res, "packet 5 (seq 2)", "first packet of sequence 2 lacks "
                   "SEQ_INCREMENTAL_STATE_CLEARED")


def test_undefined_iid():
    tb, _, h = valid_trace()
    h["forward_begin"].track_event.name_iid = 9
    res = check(tb)
    assert_reports(res, "packet 7 (seq 2)", "TrackEvent.name_iid=9 is not defined in "
                   "InternedData.event_names", "never defined")


def test_iid_zero():
    tb, _, h = valid_trace()
    h["step_begin"].track_event.debug_annotations[0].name_iid = 0
    res = check(tb)
    assert_reports(res, "packet 6 (seq 2)", "DebugAnnotation.name_iid=0 is invalid")


def test_iid_used_before_definition():
    tb, _, h = valid_trace()
    names = h["thread_first"].interned_data.event_names
    del names[1]                                            # drop (2, "forward")
    tb.packet(THREAD_SEQ, flags=2, interned_data=interned(event_names=[(2, "forward")]))
    res = check(tb)
    assert_reports(res, "packet 7 (seq 2)", "name_iid=2", "defined later, in packet 18")


def test_undefined_string_value_iid():
    tb, _, h = valid_trace()
    h["forward_begin"].track_event.debug_annotations[0].string_value_iid = 5
    res = check(tb)
    assert_reports(res, "DebugAnnotation.string_value_iid=5 is not defined in "
                   "InternedData.debug_annotation_string_values")


def test_category_iid_undefined():
    tb, _, h = valid_trace()
    h["step_begin"].track_event.category_iids[0] = 3
    assert_reports(check(tb), "TrackEvent.category_iids=3", "event_categories")


def test_interned_data_on_other_sequence_does_not_count():
    tb, _, h = valid_trace()
    # The row sequence uses name_iid 2, defined only on the thread sequence.
    h["load_begin"].track_event.name_iid = 2
    res = check(tb)
    assert_reports(res, "packet 14 (seq 3)", "name_iid=2", "sequence 3")


# ---------------------------------------------------------------------------
# Rule 4: tracks.

def test_track_used_before_described():
    tb, _, h = valid_trace()
    move_to_end(tb, h["thread"])
    res = check(tb)
    assert_reports(res, "TrackEvent uses track uuid 2, which no earlier TrackDescriptor describes")


def test_parent_uuid_not_described():
    tb, _, h = valid_trace()
    h["row"].track_descriptor.parent_uuid = 99
    assert_reports(check(tb), "TrackDescriptor uuid 3: parent_uuid 99 is never described")


def test_conflicting_redescription():
    tb, _, _ = valid_trace()
    tb.packets.insert(5, pb.TracePacket(trusted_packet_sequence_id=META_SEQ, sequence_flags=2,
                                        track_descriptor=track(ROW, name="other", parent=PROCESS)))
    assert_reports(check(tb), "TrackDescriptor uuid 3 is described again (first in packet 3) "
                   "with conflicting content (fields: name)")


def test_identical_redescription_is_fine():
    tb, m, _ = valid_trace()
    tb.packets.insert(5, pb.TracePacket(trusted_packet_sequence_id=META_SEQ, sequence_flags=2,
                                        track_descriptor=track(ROW, name="lane 1", parent=PROCESS)))
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)


def test_two_uuids_for_one_pid():
    tb, _, _ = valid_trace()
    tb.packets.insert(5, pb.TracePacket(trusted_packet_sequence_id=META_SEQ, sequence_flags=2,
                                        track_descriptor=track(9, process=(100, "again"))))
    assert_reports(check(tb), "pid 100 is already described by track uuid 1")


def test_two_uuids_for_one_thread():
    tb, _, _ = valid_trace()
    tb.packets.insert(5, pb.TracePacket(trusted_packet_sequence_id=META_SEQ, sequence_flags=2,
                                        track_descriptor=track(9, thread=(100, 101, "x"))))
    assert_reports(check(tb), "(pid 100, tid 101) is already described by track uuid 2")


# ---------------------------------------------------------------------------
# Rules 5-6: timestamps and clocks.

def test_event_without_timestamp():
    tb, _, h = valid_trace()
    h["checkpoint"].ClearField("timestamp")
    assert_reports(check(tb), "packet 8 (seq 2): TrackEvent has no TracePacket.timestamp")


def test_sequence_clock_without_snapshot():
    tb, _, h = valid_trace()
    h["row_first"].ClearField("clock_snapshot")
    res = check(tb)
    assert_reports(res, "packet 14 (seq 3)", "TracePacketDefaults.timestamp_clock_id=64 is a "
                   "sequence-scoped clock that no earlier ClockSnapshot on sequence 3 defines")


def test_sequence_clock_of_another_sequence():
    tb, _, h = valid_trace()
    h["checkpoint"].timestamp_clock_id = 64      # defined on sequence 3 only
    assert_reports(check(tb), "packet 8 (seq 2)", "TracePacket.timestamp_clock_id=64",
                   "sequence 2")


def test_unresolvable_global_clock():
    tb, _, h = valid_trace()
    h["checkpoint"].timestamp_clock_id = 200
    assert_reports(check(tb), "packet 8 (seq 2): timestamp on clock 200 cannot be converted to "
                   "BOOTTIME")


def test_builtin_clock_is_converted_through_snapshot():
    tb, m, h = valid_trace()
    h["checkpoint"].timestamp_clock_id = 3        # MONOTONIC
    h["checkpoint"].timestamp = M0 + 2500
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)
    assert res.instants[0].ts == B0 + 2500


def test_first_snapshot_needs_realtime():
    tb, _, h = valid_trace()
    del h["snapshot"].clock_snapshot.clocks[1]
    assert_reports(check(tb), "packet 0: the first ClockSnapshot lacks REALTIME (1)")


def test_no_clock_snapshot_at_all():
    tb, _, h = valid_trace()
    h["snapshot"].ClearField("clock_snapshot")
    h["row_first"].ClearField("clock_snapshot")
    h["row_first"].trace_packet_defaults.ClearField("timestamp_clock_id")
    assert_reports(check(tb), "trace: no ClockSnapshot")


# ---------------------------------------------------------------------------
# Rule 7: nesting.

def test_end_without_begin():
    tb, _, _ = valid_trace()
    tb.event(THREAD_SEQ, B0 + 9500, pc.TYPE_SLICE_END)
    assert_reports(check(tb), "packet 18 (seq 2): TrackEvent: TYPE_SLICE_END at ts %d on track "
                   "uuid 2 with no open slice" % (B0 + 9500))


def test_unclosed_slice():
    tb, _, h = valid_trace()
    tb.packets.remove(h["step_end"])
    assert_reports(check(tb), "packet 6, seq 2: slice 'step' begun at ts %d on track uuid 2 is "
                   "never ended" % (B0 + 1000))


def test_nesting_uses_timestamps_not_file_order():
    # The END of "forward" written before its BEGIN in the file still sorts after it.
    tb, m, h = valid_trace()
    tb.packets.remove(h["forward_end"])
    tb.packets.insert(tb.packets.index(h["step_begin"]), h["forward_end"])
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)


def test_overlapping_slices_on_one_track_are_caught():
    # "forward" ends after "step": the END at 3000 closes step's child correctly, but the
    # manifest's durations cannot be met because an END closes the innermost slice.
    tb, m, h = valid_trace()
    h["forward_end"].timestamp = B0 + 9500
    res = check(tb, m)
    assert_reports(res, "span 'forward'", "dur 7000 != manifest 1000")


# ---------------------------------------------------------------------------
# Rule 8: counters.

def test_counter_on_non_counter_track():
    tb, _, h = valid_trace()
    h["loss1"].track_event.track_uuid = THREAD
    assert_reports(check(tb), "packet 11 (seq 2)", "TYPE_COUNTER event on track uuid 2, which is "
                   "a thread track, not a counter track")


def test_slice_on_counter_track():
    tb, _, h = valid_trace()
    h["checkpoint"].track_event.track_uuid = COUNTER
    assert_reports(check(tb), "TYPE_INSTANT event on counter track uuid 4 'loss'")


def test_counter_without_value():
    tb, _, h = valid_trace()
    h["loss2"].track_event.ClearField("counter_value")
    assert_reports(check(tb), "packet 12 (seq 2)", "TYPE_COUNTER event without counter_value")


def test_counter_track_described_after_use():
    tb, _, h = valid_trace()
    move_to_end(tb, h["counter"])
    assert_reports(check(tb), "uses track uuid 4, which no earlier TrackDescriptor describes")


# ---------------------------------------------------------------------------
# Rule 9: raw wire encoding.

def raw_event_packet(pkt, extra_te_bytes: bytes) -> bytes:
    """pkt's bytes with extra raw bytes appended inside its TrackEvent."""
    head = copy.deepcopy(pkt)
    head.ClearField("track_event")
    te = pkt.track_event.SerializeToString() + extra_te_bytes
    return head.SerializeToString() + field_bytes(11, 2, te)


def test_flow_id_written_as_varint():
    tb, _, h = valid_trace()
    p = h["consumer_begin"]
    del p.track_event.flow_ids[:]
    i = tb.packets.index(p)
    tb.packets[i] = raw_event_packet(p, field_bytes(47, 0, varint(USER_FLOW)))
    res = check(tb)
    assert_reports(res, "packet %d (seq 3): TracePacket.track_event.flow_ids: field 47 "
                   "(flow_ids) has wire type 0 (varint); the schema says wire type 1 (fixed64)"
                   % i)


def test_terminating_flow_id_written_as_varint():
    tb, _, h = valid_trace()
    p = h["load_begin"]
    del p.track_event.terminating_flow_ids[:]
    i = tb.packets.index(p)
    tb.packets[i] = raw_event_packet(p, field_bytes(48, 0, varint(PARENT_LINK)))
    assert_reports(check(tb), "terminating_flow_ids: field 48", "wire type 0 (varint)", "fixed64")


def test_packed_repeated_field():
    tb, _, h = valid_trace()
    p = h["step_begin"]
    del p.track_event.category_iids[:]
    i = tb.packets.index(p)
    tb.packets[i] = raw_event_packet(p, field_bytes(3, 2, varint(1) + varint(1)))
    res = check(tb)
    assert_reports(res, "packet %d (seq 2): TracePacket.track_event.category_iids: field 3 "
                   "(category_iids) is packed" % i)


# ---------------------------------------------------------------------------
# Rule 10: names.

def test_missing_process_name():
    tb, _, h = valid_trace()
    h["process"].track_descriptor.process.ClearField("process_name")
    assert_reports(check(tb), "packet 1 (seq 1): TrackDescriptor uuid 1: process track has an "
                   "empty ProcessDescriptor.process_name")


def test_missing_thread_name():
    tb, _, h = valid_trace()
    h["thread"].track_descriptor.thread.thread_name = ""
    assert_reports(check(tb), "TrackDescriptor uuid 2: thread track has an empty "
                   "ThreadDescriptor.thread_name")


def test_no_process_track():
    tb, _, h = valid_trace()
    tb.packets.remove(h["process"])
    h["row"].track_descriptor.ClearField("parent_uuid")
    h["counter"].track_descriptor.ClearField("parent_uuid")
    assert_reports(check(tb), "trace: no process track")


# ---------------------------------------------------------------------------
# Rule 11: the manifest.

def test_wrong_arg_value():
    tb, m, _ = valid_trace()
    m["spans"][0]["args"]["batch"]["value"] = 31
    assert_reports(check(tb, m), "span 'step' (manifest spans[0]) does not match the trace",
                   "packet 6, seq 2", "arg 'batch' value 32 != manifest 31")


def test_wrong_arg_type():
    tb, m, _ = valid_trace()
    m["spans"][2]["args"]["bytes"]["type"] = "int"
    assert_reports(check(tb, m), "span 'data_load'",
                   "arg 'bytes' type uint (DebugAnnotation.uint_value) != manifest int")


def test_missing_arg_and_unexpected_arg():
    tb, m, _ = valid_trace()
    m["spans"][1]["args"] = {"stage": arg("string", "train")}
    res = check(tb, m)
    assert_reports(res, "span 'forward'", "arg 'stage' missing", "unexpected arg 'phase'")


def test_wrong_string_value():
    tb, m, _ = valid_trace()
    m["spans"][1]["args"]["phase"]["value"] = "eval"
    assert_reports(check(tb, m), "arg 'phase' value 'train' != manifest 'eval'")


def test_missing_span():
    tb, m, _ = valid_trace()
    m["spans"].append({"name": "backward", "ts": B0 + 4000, "dur": 10, "parent": "step",
                       "args": {}})
    assert_reports(check(tb, m), "span 'backward' (manifest spans[4], ts=%d, dur=10, parent "
                   "'step') is missing from the trace" % (B0 + 4000))


def test_extra_span():
    tb, m, _ = valid_trace()
    del m["spans"][3]
    m["flows"] = []
    assert_reports(check(tb, m), "trace has a span 'consumer' (packet 16, seq 3, ts=%d, dur=500, "
                   "parent None) that the manifest does not list" % (B0 + 7000))


def test_duplicate_span_counts_exactly():
    # Names are not unique: a second identical manifest span needs a second slice.
    tb, m, _ = valid_trace()
    m["spans"].append(dict(m["spans"][3]))
    assert_reports(check(tb, m), "span 'consumer' (manifest spans[4]", "missing from the trace")


def test_wrong_parent():
    tb, m, _ = valid_trace()
    m["spans"][1]["parent"] = None
    assert_reports(check(tb, m), "span 'forward'", "parent 'step' != manifest None")


def test_displaced_child_without_link_loses_its_parent():
    tb, m, h = valid_trace()
    del h["load_begin"].track_event.terminating_flow_ids[:]
    res = check(tb, m)
    assert_reports(res, "span 'data_load'", "parent None != manifest 'step'")


def test_terminating_flow_on_a_child_with_a_stack_parent():
    tb, _, h = valid_trace()
    h["forward_begin"].track_event.terminating_flow_ids.append(USER_FLOW)
    assert_reports(check(tb), "terminating flow 7 links slice 'forward' to 'step', but 'forward' "
                   "already has a parent on its own track")


def test_terminating_flow_without_start():
    tb, _, h = valid_trace()
    h["step_begin"].track_event.flow_ids.remove(PARENT_LINK)
    assert_reports(check(tb), "terminating_flow_ids %d on slice 'data_load' has no earlier event "
                   "with that id" % PARENT_LINK)


def test_wrong_ts():
    tb, m, _ = valid_trace()
    m["spans"][1]["ts"] += 1
    assert_reports(check(tb, m), "span 'forward'", "ts %d != manifest %d"
                   % (B0 + 2000, B0 + 2001))


def test_wrong_dur():
    tb, m, _ = valid_trace()
    m["spans"][3]["dur"] = 501
    assert_reports(check(tb, m), "span 'consumer'", "dur 500 != manifest 501")


def test_wrong_instant():
    tb, m, _ = valid_trace()
    m["instants"][0]["ts"] -= 5
    assert_reports(check(tb, m), "instant 'checkpoint' (manifest instants[0]) does not match",
                   "ts %d != manifest %d" % (B0 + 2500, B0 + 2495))


def test_wrong_counter_sample():
    tb, m, _ = valid_trace()
    m["counters"][0]["samples"][1][1] = 2
    res = check(tb, m)
    assert_reports(res, "counter 'loss': sample (ts %d, value 2) missing from the trace" % (B0 + 1300))
    assert_reports(res, "counter 'loss': sample (ts %d, value 1) in the trace but not the manifest"
                   % (B0 + 1300))


def test_wrong_counter_unit():
    tb, m, _ = valid_trace()
    m["counters"][0]["unit"] = "W"
    assert_reports(check(tb, m), "counter 'loss' (manifest counters[0]): the trace's counter track "
                   "has unit_name '%' != manifest 'W'")


def test_missing_counter():
    tb, m, _ = valid_trace()
    m["counters"].append({"name": "lr", "unit": "", "samples": [[B0, 0.1]]})
    assert_reports(check(tb, m), "counter 'lr' (manifest counters[1], 1 samples) has no counter "
                   "track in the trace")


def test_wrong_flow():
    tb, m, _ = valid_trace()
    m["flows"] = [["consumer", "step"]]
    res = check(tb, m)
    assert_reports(res, "flow 'consumer' -> 'step' (x1) is in the manifest but not in the trace")
    assert_reports(res, "trace has flow 'step' -> 'consumer' (x1) that the manifest does not list")


def test_flow_chain_follows_timestamps():
    # Three events with one id: TP draws earliest -> next -> next, whatever the file order.
    tb, m, h = valid_trace()
    h["forward_begin"].track_event.flow_ids.append(USER_FLOW)
    tb.packets.remove(h["forward_begin"])
    tb.packets.append(h["forward_begin"])        # later in the file, earlier in time
    m["flows"] = [["step", "forward"], ["forward", "consumer"]]
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)


def test_wrong_process_name():
    tb, m, _ = valid_trace()
    m["process_name"] = "other"
    assert_reports(check(tb, m), "manifest: process_name 'other' is not the name of any process "
                   "track")


def test_dropped_count_missing():
    tb, m, _ = valid_trace()
    m["dropped"] = 5
    assert_reports(check(tb, m), "manifest: dropped=5 but the trace has no INSTANT named "
                   "'devprof: ...5...' with an int debug annotation dropped_events=5")


def drop_marker(tb, count, name=None):
    return tb.event(META_SEQ, B0 + 9000, pc.TYPE_INSTANT, track=PROCESS,
                    name=name or "devprof: %d events dropped (buffer full at max_events=100)" % count,
                    debug_annotations=[annotation(name="dropped_events", int_value=count),
                                       annotation(name="max_events", int_value=100)])


def test_dropped_count_shown():
    tb, m, _ = valid_trace()
    drop_marker(tb, 5)
    m["dropped"] = 5
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)


def test_dropped_marker_with_wrong_count():
    tb, m, _ = valid_trace()
    drop_marker(tb, 4, name="devprof: 5 events dropped")
    m["dropped"] = 5
    assert_reports(check(tb, m), "manifest: dropped=5 but the trace has no INSTANT")


def test_drop_marker_without_drops_is_extra():
    tb, m, _ = valid_trace()
    drop_marker(tb, 5)
    assert_reports(check(tb, m), "trace has an instant 'devprof: 5 events dropped")


def test_extra_slices_are_allowed():
    tb, m, _ = valid_trace()
    tb.event(THREAD_SEQ, B0 + 9100, pc.TYPE_INSTANT, name="marker")
    m["extra_slices"] = ["marker"]
    res = check(tb, m)
    assert res.ok, pc.format_violations(res)


def test_manifest_is_validated():
    tb, m, _ = valid_trace()
    m["bogus"] = 1
    m["counters"][0]["samples"][0][0] = float(B0 + 1200)
    del m["flows"]
    res = check(tb, m)
    assert_reports(res, "manifest: unknown key 'bogus'")
    assert_reports(res, "manifest: counters[0].samples[0] ts", "must be an integer")
    assert_reports(res, "manifest: required key 'flows' is missing")
    assert not res.manifest_checked


def test_manifest_arg_type_unknown():
    tb, m, _ = valid_trace()
    m["spans"][0]["args"]["batch"] = {"type": "unknown", "value": None}
    assert_reports(check(tb, m), "manifest: spans[0].args['batch'].type 'unknown' is not one of")


# ---------------------------------------------------------------------------
# Framing.

def test_truncated_file():
    tb, _, _ = valid_trace()
    data = tb.bytes()[:-3]
    res = check(data)
    assert_reports(res, "truncated file: packet 17 at byte offset")
    assert len(res.violations) == 1


def test_truncated_gzip():
    tb, _, _ = valid_trace()
    res = check(gzip.compress(tb.bytes())[:-10])
    assert_reports(res, "corrupt or truncated gzip file")


def test_not_a_trace():
    res = check(b"\x12\x03abc")
    assert_reports(res, "corrupt file: byte offset 0 (after 0 packets) holds field 2")


def test_empty_file():
    assert_reports(check(b""), "empty trace")


def test_corrupt_packet_body():
    tb, _, _ = valid_trace()
    tb.packets.insert(1, b"\x5a\x10\x48")       # track_event claims 16 bytes, has 1
    res = check(tb)
    assert_reports(res, "packet 1: corrupt TracePacket bytes")
