package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// pfPacket appends one TracePacket (Trace.packet, field 1) whose fields
// fn appends.
func pfPacket(b []byte, fn func(p []byte) []byte) []byte {
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, fn(nil))
}

func pfMsg(b []byte, num protowire.Number, fn func(m []byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, fn(nil))
}

func pfVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// pfInstant is a TrackEvent (field 11) of TYPE_INSTANT (9: 3) named name
// (23) on track 1 (11).
func pfInstant(p []byte, name string) []byte {
	return pfMsg(p, 11, func(m []byte) []byte {
		m = pfVarint(m, 9, 3)
		m = pfVarint(m, 11, 1)
		m = protowire.AppendTag(m, 23, protowire.BytesType)
		return protowire.AppendString(m, name)
	})
}

// A Perfetto trace with one event the reader cannot place (an instant
// without a timestamp) converts and summarizes; both commands say what
// was dropped, and the converted file carries the drop.
func TestPerfettoDropsReported(t *testing.T) {
	var data []byte
	data = pfPacket(data, func(p []byte) []byte {
		p = pfVarint(p, 10, 1)                      // trusted_packet_sequence_id
		p = pfVarint(p, 13, 1)                      // SEQ_INCREMENTAL_STATE_CLEARED
		return pfMsg(p, 60, func(m []byte) []byte { // TrackDescriptor
			m = pfVarint(m, 1, 1)
			m = protowire.AppendTag(m, 2, protowire.BytesType)
			return protowire.AppendString(m, "t")
		})
	})
	data = pfPacket(data, func(p []byte) []byte {
		p = pfVarint(p, 8, 1000)
		p = pfVarint(p, 10, 1)
		return pfInstant(p, "kept")
	})
	data = pfPacket(data, func(p []byte) []byte {
		p = pfVarint(p, 10, 1)
		return pfInstant(p, "lost")
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "foreign.pftrace")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	const said = "perfetto reader dropped 1 event (track_event_missing_timestamp)"
	code, stdout, stderr := runCLI("summary", in)
	if code != 0 || !strings.Contains(stdout, said) || !strings.Contains(stdout, "(perfetto reader: 1)") || !strings.Contains(stdout, "1 instant") {
		t.Fatalf("summary: exit %d\n%s%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out.json")
	code, stdout, stderr = runCLI("convert", in, out)
	if code != 0 || !strings.Contains(stdout+stderr, said) {
		t.Fatalf("convert: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("summary", out)
	if code != 0 || !strings.Contains(stdout, said) || !strings.Contains(stdout, "(perfetto reader: 1)") {
		t.Fatalf("summary of the converted file: exit %d\n%s%s", code, stdout, stderr)
	}
}
