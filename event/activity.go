package event

// ActivityKind is what a KindActivity record did on its device: a
// category every source fills in its own terms and every exporter renders
// in its format's (exporters/xplane alone turns a kernel's arguments into
// xprof's kernel_details, for one).
type ActivityKind uint8

// The kinds of device activity.
const (
	ActivityUnknown  ActivityKind = iota // not said (files of other tools)
	ActivityKernel                       // a kernel ran
	ActivityMemcpy                       // a copy between memories or devices
	ActivityMemset                       // memory was filled
	ActivityAlloc                        // device memory was allocated
	ActivityFree                         // device memory was freed
	ActivitySync                         // the host waited on the device
	ActivityAPI                          // a host call into the device library
	ActivityOverhead                     // time the tracing itself took
)

// String returns the kind's name ("kernel", "memcpy", ...).
func (k ActivityKind) String() string {
	switch k {
	case ActivityKernel:
		return "kernel"
	case ActivityMemcpy:
		return "memcpy"
	case ActivityMemset:
		return "memset"
	case ActivityAlloc:
		return "alloc"
	case ActivityFree:
		return "free"
	case ActivitySync:
		return "sync"
	case ActivityAPI:
		return "api"
	case ActivityOverhead:
		return "overhead"
	}
	return "unknown"
}

// Activity returns the kind of a KindActivity record; ActivityUnknown for
// other records.
func (r *Record) Activity() ActivityKind {
	if r.kind != KindActivity || r.id2 < 0 || r.id2 > int64(ActivityOverhead) {
		return ActivityUnknown
	}
	return ActivityKind(r.id2)
}

// Argument keys of device activity, in no format's vocabulary. Sources
// write them; exporters show them as they are or turn them into their
// format's (xprof's tf_op, kernel_details, memcpy_details).
const (
	// ArgAnnotation (string) names the host annotation (an
	// annotate.Device span) inside which the device work was launched.
	ArgAnnotation = "annotation"
	// Kernels: launch shape "x,y,z" (strings) and resources (ints).
	ArgGrid                = "grid"
	ArgBlock               = "block"
	ArgRegistersPerThread  = "registers_per_thread"
	ArgStaticSharedMemory  = "static_shared_memory"
	ArgDynamicSharedMemory = "dynamic_shared_memory"
	// ArgBytes (uint) is the size of a copy, memset, allocation or free.
	ArgBytes = "bytes"
	// ArgCopyKind (string) is a copy's direction: HtoD, DtoH, DtoD, HtoH,
	// PtoP (between devices), or another name the source gives.
	ArgCopyKind = "copy_kind"
	// ArgSrcMemoryKind and ArgDstMemoryKind (strings) are the kinds of
	// memory a copy reads and writes, ArgMemoryKind that of a memset or
	// allocation: pageable, pinned, device, array, managed,
	// device_static, managed_static or unknown.
	ArgSrcMemoryKind = "src_memory_kind"
	ArgDstMemoryKind = "dst_memory_kind"
	ArgMemoryKind    = "memory_kind"
	// ArgSrcDevice and ArgDstDevice (uints) are the devices of a copy
	// between devices; other copies stay on their track's device.
	ArgSrcDevice = "src_device"
	ArgDstDevice = "dst_device"
	// ArgDeviceID (uint) on a host API call is the device of the work it
	// launched.
	ArgDeviceID = "device_id"
	// ArgMangledName (string) is a kernel's symbol as compiled
	// ("_Z5saxpyifPKfPf") when the event's name is its demangled form.
	ArgMangledName = "mangled_name"
)
