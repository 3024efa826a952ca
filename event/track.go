package event

// TrackKind says what a registered Track stands for.
type TrackKind uint8

const (
	// TrackDeviceStream is one stream (queue) of one device.
	TrackDeviceStream TrackKind = iota + 1
	// TrackHostThread is an OS thread of the host, for sources that know
	// them (driver API callbacks).
	TrackHostThread
	// TrackDevice is a whole device: what its counter samples (utilization,
	// memory, power) belong to, and the holder of its identity when no
	// stream of it has work.
	TrackDevice
	// TrackMemory is the memory a tracker (package devmem) holds on one
	// device (Device; -1 for host memory): its allocations and frees, as
	// ActivityAlloc and ActivityFree instants with the memory arguments
	// (ArgAddress, ArgBytes, ArgInUse, …; see event/memory.go).
	TrackMemory
	// TrackProcess is a whole process of the host (Process says which:
	// 0 for the recording program, n for Snapshot.Processes[n-1]): the
	// counter samples of that process and its instants that sit on no
	// thread (Chrome's process- and global-scoped instants, Perfetto's
	// events on a process track) are on it. Builder.ProcessTrack makes
	// one; Snapshot.Owner says whose a record is.
	TrackProcess
)

// Track describes a timeline that KindActivity records are placed on.
// Host spans do not need one: their lanes are implicit.
type Track struct {
	Kind TrackKind
	// Device is the device ordinal (index) for device tracks.
	Device int
	// DeviceName is a human name for the device ("NVIDIA H100 80GB HBM3").
	DeviceName string
	// Vendor is the device's maker as the source knows it ("NVIDIA"); ""
	// if unknown.
	Vendor string
	// UUID identifies the physical device across processes and hosts
	// ("GPU-6b2e…", as NVML and nvidia-smi give it); "" if unknown.
	UUID string
	// PCIBusID is the device's PCI address ("00000000:17:00.0"); "" if
	// unknown.
	PCIBusID string
	// ID is the stream id for device tracks, the OS thread id for host threads.
	ID int64
	// Name is the display name of the track ("Stream #7(Compute)").
	Name string
	// Caps describes the device of a device track, when the source knows
	// it; zero fields are unknown.
	Caps DeviceCaps
	// Process is the process a host-thread or process track belongs to:
	// 0 for the recording program (Meta), n for Snapshot.Processes[n-1]
	// (see Snapshot.ProcessOf). Device tracks stay devices: their process
	// is their device's.
	Process int
	// SortIndex orders the track among its process's threads in viewers
	// that honour it (Chrome's thread_sort_index), when Sorted.
	SortIndex int64
	Sorted    bool
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
