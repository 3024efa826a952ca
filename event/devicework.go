package event

import (
	"strconv"
	"strings"
)

// What an event on a device's stream is — device work of which kind, a
// wait, or not work at all — is, like StreamOf, a convention for reading
// the model that every consumer must share: devprof analyze's breakdowns
// and the kernels table count the same events as work.

// WorkKind says what an event of kind on a device's stream is, and
// whether it is device work (what a device's busy time is made of): a
// kernel, a copy or a memset. A wait (TSL's sync_type, Kineto's
// cuda_sync on a stream, "...Synchronize"), an allocation noted on a
// stream (xprof's MemoryAlloc) or any other kind is not work. An event
// of no known kind (a file's slice) is read from its arguments and name;
// what is left is a kernel.
func WorkKind(kind ActivityKind, name string, args []Arg) (ActivityKind, bool) {
	switch kind {
	case ActivityKernel, ActivityMemcpy, ActivityMemset:
		return kind, true
	case ActivityUnknown:
	default:
		return kind, false
	}
	for i := range args {
		switch args[i].Key {
		case "sync_type", "wait_on_stream", "wait_on_cuda_event_record_corr_id":
			return ActivitySync, false
		case ArgCopyKind, "memcpy_details":
			return ActivityMemcpy, true
		}
	}
	switch {
	case strings.Contains(name, "Synchroniz"), strings.HasSuffix(name, " Sync"):
		return ActivitySync, false
	case name == "MemoryAlloc", name == "MemoryFree":
		return ActivityUnknown, false
	case hasPrefixFold(name, "memcpy"), strings.HasPrefix(name, "dma"):
		return ActivityMemcpy, true
	case hasPrefixFold(name, "memset"):
		return ActivityMemset, true
	}
	return ActivityKernel, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// collectives are what a kernel's name holds (in lower case) when it is
// communication: NCCL's and RCCL's kernels, XLA's collective ops.
var collectives = []string{"all-reduce", "allreduce", "all_reduce", "all-gather", "allgather", "all_gather",
	"reduce-scatter", "reducescatter", "reduce_scatter", "all-to-all", "alltoall", "all_to_all", "collective-permute", "sendrecv"}

// IsCollective reports whether a kernel is communication, by its name.
func IsCollective(name string) bool {
	if hasPrefixFold(name, "nccl") || hasPrefixFold(name, "rccl") {
		return true
	}
	lower := strings.ToLower(name)
	for _, c := range collectives {
		if strings.Contains(lower, c) {
			return true
		}
	}
	return false
}

// ProfilerStep reads PyTorch's step marker, a span named
// "ProfilerStep#<n>", and returns n. Where a trace marks steps itself
// (Record.IsStep), those are its steps and PyTorch's inside them the same
// steps again; where it marks none, devprof analyze and the steps table
// take PyTorch's.
func ProfilerStep(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "ProfilerStep#")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}
