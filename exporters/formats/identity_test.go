package formats

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/devprof/devprof/event"
)

// A device's identity (index, name, vendor, UUID, capabilities) is a set of
// track fields, written by each timeline format that has devices and read
// back as the same fields, never parsed from display names alone.
func TestDeviceIdentityRoundTrips(t *testing.T) {
	want := event.Track{
		Kind: event.TrackDeviceStream, Device: 1, ID: 7,
		DeviceName: "NVIDIA H100 80GB HBM3", Vendor: "NVIDIA", UUID: "GPU-6b2e1c3a-0000-1111-2222-333344445555", PCIBusID: "00000000:17:00.0",
		Caps: event.DeviceCaps{ClockRateKHz: 1980000, Cores: 132, MemoryBytes: 85017493504, MemoryBandwidth: 3352320000000, ComputeCapMajor: 9},
	}
	b := event.NewBuilder(event.Meta{Host: "h", PID: 9, Program: "p", Stop: event.ClockAnchor{Mono: 10_000}})
	tr := b.Track(want)
	b.Activity(tr, "kernel", 1_000, 2_000, nil)
	// A device's counters belong to the device, not the host; a counter
	// of a device with no streams makes its device appear too.
	devTrack := b.Track(event.Track{Kind: event.TrackDevice, Device: 1, Vendor: "NVIDIA"})
	b.TrackCounter(devTrack, "utilization", "%", 1_500, 87)
	idle := b.Track(event.Track{Kind: event.TrackDevice, Device: 2, DeviceName: "idle GPU"})
	b.TrackCounter(idle, "power", "W", 1_500, 70)
	b.Counter("loss", "", 1_500, 0.5)
	s := b.Snapshot()
	for _, f := range []*Format{Perfetto, XPlane} {
		t.Run(f.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x"+f.Extensions[0])
			if err := WriteFile(path, f, s); err != nil {
				t.Fatal(err)
			}
			got, _, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			var dev *event.Track
			for i := range got.Tracks {
				if got.Tracks[i].Kind == event.TrackDeviceStream {
					dev = &got.Tracks[i]
				}
			}
			if dev == nil {
				t.Fatalf("no device track read back: %+v", got.Tracks)
			}
			if dev.Device != want.Device || dev.DeviceName != want.DeviceName || dev.Vendor != want.Vendor || dev.UUID != want.UUID || dev.PCIBusID != want.PCIBusID {
				t.Errorf("device %d %q %q %q %q, want %d %q %q %q %q", dev.Device, dev.DeviceName, dev.Vendor, dev.UUID, dev.PCIBusID, want.Device, want.DeviceName, want.Vendor, want.UUID, want.PCIBusID)
			}
			if dev.Caps != want.Caps {
				t.Errorf("caps %+v, want %+v", dev.Caps, want.Caps)
			}
			counters := map[string]string{}
			for _, r := range got.Events {
				if r.Kind() != event.KindCounter {
					continue
				}
				where := "host"
				if tr, ok := got.TrackOf(r); ok {
					where = fmt.Sprintf("device %d (%s)", tr.Device, tr.DeviceName)
				}
				unit, v := got.Counter(r)
				counters[got.Name(r)] = fmt.Sprintf("%s %v %s", where, v, unit)
			}
			wantCounters := map[string]string{
				"utilization": "device 1 (NVIDIA H100 80GB HBM3) 87 %",
				"power":       "device 2 (idle GPU) 70 W",
				"loss":        "host 0.5 ",
			}
			if !reflect.DeepEqual(counters, wantCounters) {
				t.Errorf("counters %q, want %q", counters, wantCounters)
			}
		})
	}
}
