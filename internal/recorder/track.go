package recorder

import "github.com/devprof/devprof/event"

// AddTrack registers a track and returns its id (non-zero) for
// KindActivity records. Sources call it when they first meet a stream, not
// per event: it takes a lock.
func (b *Buffer) AddTrack(t event.Track) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tracks = append(b.tracks, t)
	return uint32(len(b.tracks))
}

// FindTrack returns the id of a registered track with the same kind,
// device and id, or 0.
func (b *Buffer) FindTrack(kind event.TrackKind, device int, id int64) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, t := range b.tracks {
		if t.Kind == kind && t.Device == device && t.ID == id {
			return uint32(i + 1)
		}
	}
	return 0
}

// SetTrack replaces what a registered track says about itself (a source
// that learns a device's identity after another registered it).
func (b *Buffer) SetTrack(id uint32, t event.Track) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id > 0 && int(id) <= len(b.tracks) {
		b.tracks[id-1] = t
	}
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
