package event

// TrackKind says what a registered Track stands for.
type TrackKind uint8

const (
	// TrackDeviceStream is one stream (queue) of one device.
	TrackDeviceStream TrackKind = iota + 1
	// TrackHostThread is an OS thread of the host, for sources that know
	// them (driver API callbacks).
	TrackHostThread
)

// Track describes a timeline that KindActivity records are placed on.
// Host spans do not need one: their lanes are implicit.
type Track struct {
	Kind TrackKind
	// Device is the device ordinal for device tracks.
	Device int
	// DeviceName is a human name for the device ("NVIDIA H100 80GB HBM3").
	DeviceName string
	// ID is the stream id for device tracks, the OS thread id for host threads.
	ID int64
	// Name is the display name of the track ("Stream #7(Compute)").
	Name string
	// Caps describes the device of a device track, when the source knows
	// it; zero fields are unknown.
	Caps DeviceCaps
}

// DeviceCaps are a device's capabilities, as TensorBoard's profile plugin
// shows them for a GPU.
type DeviceCaps struct {
	ClockRateKHz    int64  // SM clock
	Cores           int64  // streaming multiprocessors
	MemoryBytes     uint64 // device memory size
	MemoryBandwidth uint64 // bytes per second
	ComputeCapMajor int64
	ComputeCapMinor int64
}

// AddTrack registers a track and returns its id (non-zero) for
// KindActivity records. Sources call it when they first meet a stream, not
// per event: it takes a lock.
func (b *Buffer) AddTrack(t Track) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tracks = append(b.tracks, t)
	return uint32(len(b.tracks))
}

// FindTrack returns the id of a registered track with the same kind,
// device and id, or 0.
func (b *Buffer) FindTrack(kind TrackKind, device int, id int64) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, t := range b.tracks {
		if t.Kind == kind && t.Device == device && t.ID == id {
			return uint32(i + 1)
		}
	}
	return 0
}

// SetTrackName renames a registered track: a source that learns what a
// track holds as records arrive (the kinds of work on a stream) names it
// when it stops.
func (b *Buffer) SetTrackName(id uint32, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id > 0 && int(id) <= len(b.tracks) {
		b.tracks[id-1].Name = name
	}
}

// DeviceCorrelator attributes device work to host spans: a device source
// registers one with SetDeviceCorrelator, and annotate.Device pushes the id
// of its span before the code inside launches work on the device, and pops
// it after.
type DeviceCorrelator interface {
	// Push makes span spanID (named name, on lane) the current
	// correlation of the calling OS thread (the caller has locked its
	// goroutine to it).
	Push(spanID uint64, lane uint32, name string) error
	// Pop undoes the last Push of the calling OS thread.
	Pop() error
}

// SetDeviceCorrelator registers c (nil to remove it).
func (b *Buffer) SetDeviceCorrelator(c DeviceCorrelator) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.correlator = c
}

// Correlator returns the registered DeviceCorrelator, or nil.
func (b *Buffer) Correlator() DeviceCorrelator {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.correlator
}
