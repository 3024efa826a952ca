package cuptiwrap

import (
	"errors"
	"strings"
	"testing"
)

func TestErrorMessages(t *testing.T) {
	e := &Error{Op: "cuptiActivityEnable", Code: 27, Name: "CUPTI_ERROR_NOT_SUPPORTED", Detail: "kind MEMORY2"}
	if got := e.Error(); got != "cuptiwrap: cuptiActivityEnable (kind MEMORY2): CUPTI_ERROR_NOT_SUPPORTED (code 27)" {
		t.Errorf("Error() = %q", got)
	}
	for _, s := range []error{ErrNoDevice, ErrPermission, ErrProfilerConflict} {
		if errors.Is(e, s) {
			t.Errorf("code 27 matches %v", s)
		}
	}
	// 12 means "another subscriber" only from cuptiSubscribe.
	e = &Error{Op: "cuptiActivityGetNextRecord", Code: 12, Name: "CUPTI_ERROR_MAX_LIMIT_REACHED"}
	if errors.Is(e, ErrProfilerConflict) || strings.Contains(e.Error(), "profiler") {
		t.Errorf("%v matches ErrProfilerConflict", e)
	}
	le := &LoadError{Tried: []Attempt{{"libcupti.so.13", "cannot open shared object file"}}}
	if !errors.Is(le, ErrLibraryNotFound) || errors.Is(le, ErrNoDevice) {
		t.Error("LoadError matching")
	}
}

func TestNames(t *testing.T) {
	for k, want := range map[Kind]string{KindKernel: "kernel", KindMemcpyPeer: "memcpy-peer", KindExternalCorrelation: "external-correlation", 0: "Kind(0)", 200: "Kind(200)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
	if len(Kinds()) != 10 {
		t.Errorf("Kinds() = %v", Kinds())
	}
	for _, k := range Kinds() {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("%d has no name", k)
		}
	}
	if CopyKindName(1) != "HtoD" || CopyKindName(2) != "DtoH" || CopyKindName(8) != "DtoD" || CopyKindName(10) != "PtoP" || CopyKindName(99) != "CopyKind(99)" {
		t.Error("CopyKindName")
	}
	if MemoryKindName(2) != "Pinned" || MemoryKindName(3) != "Device" || SyncTypeName(3) != "StreamSynchronize" ||
		MemoryOpName(1) != "alloc" || MemoryOpName(2) != "free" || OverheadKindName(1<<16) != "CUPTI buffer flush" ||
		OverheadKindName(5<<16) != "Lazy function loading" || OverheadKindName(9<<16) != "CUPTI overhead (kind 0x90000)" ||
		ExternalKindName(3) != "CUSTOM0" {
		t.Error("names")
	}
	for in, want := range map[string]string{
		"cudaLaunchKernel_v7000":      "cudaLaunchKernel",
		"cudaMallocAsync_v11020":      "cudaMallocAsync",
		"cudaLaunchKernel_ptsz_v7000": "cudaLaunchKernel_ptsz",
		"cuMemAlloc_v2":               "cuMemAlloc_v2",
		"cuLaunchKernel":              "cuLaunchKernel",
		"_v7000":                      "",
		"x7000":                       "x7000",
	} {
		if got := trimVersionTag(in); got != want {
			t.Errorf("trimVersionTag(%q) = %q, want %q", in, got, want)
		}
	}
}
