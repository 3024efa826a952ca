package gpucheck

// Phase is one stretch of known load in the NVML window run (gpucheck
// -window): its name and its wall-clock bounds, Unix ns.
type Phase struct {
	Name               string
	WallStart, WallEnd int64
}

// Window is what the NVML window run did, as it writes it to phases.json
// beside its trace: the phases in order (idle, hold, spin, copy, free),
// the device memory held from hold to free, and the copy loop's shape.
type Window struct {
	Phases    []Phase
	HoldBytes int64
	CopyBytes int64
	CopyTrips int64
	// Perfetto and XPlane name the run's trace files in its run directory.
	Perfetto, XPlane string
}
