//go:build cgo

package cuptiwrap

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// Record offsets, from shim.h (checked against the real headers by
// abicheck/abi_check.c).
const (
	offKernelRegisters      = C.DPC_KERNEL_REGISTERS
	offKernelStart          = C.DPC_KERNEL_START
	offKernelEnd            = C.DPC_KERNEL_END
	offKernelDevice         = C.DPC_KERNEL_DEVICE
	offKernelContext        = C.DPC_KERNEL_CONTEXT
	offKernelStream         = C.DPC_KERNEL_STREAM
	offKernelGridX          = C.DPC_KERNEL_GRID_X
	offKernelBlockX         = C.DPC_KERNEL_BLOCK_X
	offKernelStaticShared   = C.DPC_KERNEL_STATIC_SHARED
	offKernelDynamicShared  = C.DPC_KERNEL_DYNAMIC_SHARED
	offKernelCorrelation    = C.DPC_KERNEL_CORRELATION
	offKernelName           = C.DPC_KERNEL_NAME
	offKernelGraphID        = C.DPC_KERNEL5_GRAPH_ID
	offKernelDeviceLaunched = C.DPC_KERNEL10_DEVICE_LAUNCHED

	offMemcpyCopyKind       = C.DPC_MEMCPY_COPY_KIND
	offMemcpySrcKind        = C.DPC_MEMCPY_SRC_KIND
	offMemcpyDstKind        = C.DPC_MEMCPY_DST_KIND
	offMemcpyBytes          = C.DPC_MEMCPY_BYTES
	offMemcpyStart          = C.DPC_MEMCPY_START
	offMemcpyEnd            = C.DPC_MEMCPY_END
	offMemcpyDevice         = C.DPC_MEMCPY_DEVICE
	offMemcpyContext        = C.DPC_MEMCPY_CONTEXT
	offMemcpyStream         = C.DPC_MEMCPY_STREAM
	offMemcpyCorrelation    = C.DPC_MEMCPY_CORRELATION
	offMemcpyGraphID        = C.DPC_MEMCPY4_GRAPH_ID
	offMemcpyDeviceLaunched = C.DPC_MEMCPY6_DEVICE_LAUNCHED

	offPtoPCopyKind    = C.DPC_PTOP_COPY_KIND
	offPtoPSrcKind     = C.DPC_PTOP_SRC_KIND
	offPtoPDstKind     = C.DPC_PTOP_DST_KIND
	offPtoPBytes       = C.DPC_PTOP_BYTES
	offPtoPStart       = C.DPC_PTOP_START
	offPtoPEnd         = C.DPC_PTOP_END
	offPtoPDevice      = C.DPC_PTOP_DEVICE
	offPtoPContext     = C.DPC_PTOP_CONTEXT
	offPtoPStream      = C.DPC_PTOP_STREAM
	offPtoPSrcDevice   = C.DPC_PTOP_SRC_DEVICE
	offPtoPDstDevice   = C.DPC_PTOP_DST_DEVICE
	offPtoPCorrelation = C.DPC_PTOP_CORRELATION

	offMemsetValue          = C.DPC_MEMSET_VALUE
	offMemsetBytes          = C.DPC_MEMSET_BYTES
	offMemsetStart          = C.DPC_MEMSET_START
	offMemsetEnd            = C.DPC_MEMSET_END
	offMemsetDevice         = C.DPC_MEMSET_DEVICE
	offMemsetContext        = C.DPC_MEMSET_CONTEXT
	offMemsetStream         = C.DPC_MEMSET_STREAM
	offMemsetCorrelation    = C.DPC_MEMSET_CORRELATION
	offMemsetMemoryKind     = C.DPC_MEMSET_MEMORY_KIND
	offMemsetGraphID        = C.DPC_MEMSET3_GRAPH_ID
	offMemsetDeviceLaunched = C.DPC_MEMSET4_DEVICE_LAUNCHED

	offMemoryOperation   = C.DPC_MEMORY_OPERATION
	offMemoryKind        = C.DPC_MEMORY_KIND
	offMemoryCorrelation = C.DPC_MEMORY_CORRELATION
	offMemoryAddress     = C.DPC_MEMORY_ADDRESS
	offMemoryBytes       = C.DPC_MEMORY_BYTES
	offMemoryTimestamp   = C.DPC_MEMORY_TIMESTAMP
	offMemoryProcess     = C.DPC_MEMORY_PROCESS
	offMemoryDevice      = C.DPC_MEMORY_DEVICE
	offMemoryContext     = C.DPC_MEMORY_CONTEXT
	offMemoryStream      = C.DPC_MEMORY_STREAM

	offAPICBID        = C.DPC_API_CBID
	offAPIStart       = C.DPC_API_START
	offAPIEnd         = C.DPC_API_END
	offAPIProcess     = C.DPC_API_PROCESS
	offAPIThread      = C.DPC_API_THREAD
	offAPICorrelation = C.DPC_API_CORRELATION
	offAPIReturn      = C.DPC_API_RETURN

	offSyncType        = C.DPC_SYNC_TYPE
	offSyncStart       = C.DPC_SYNC_START
	offSyncEnd         = C.DPC_SYNC_END
	offSyncCorrelation = C.DPC_SYNC_CORRELATION
	offSyncContext     = C.DPC_SYNC_CONTEXT
	offSyncStream      = C.DPC_SYNC_STREAM

	offExtKind        = C.DPC_EXT_KIND
	offExtID          = C.DPC_EXT_ID
	offExtCorrelation = C.DPC_EXT_CORRELATION

	offOverheadKind       = C.DPC_OVERHEAD_KIND
	offOverheadObjectKind = C.DPC_OVERHEAD_OBJECT_KIND
	offOverheadObjectID   = C.DPC_OVERHEAD_OBJECT_ID
	offOverheadStart      = C.DPC_OVERHEAD_START
	offOverheadEnd        = C.DPC_OVERHEAD_END
)

// Field readers. Records are 8-byte aligned and every field devprof reads
// is naturally aligned inside them, so plain loads are safe.
func u8(p unsafe.Pointer, off uintptr) uint8   { return *(*uint8)(unsafe.Add(p, off)) }
func u16(p unsafe.Pointer, off uintptr) uint16 { return *(*uint16)(unsafe.Add(p, off)) }
func u32(p unsafe.Pointer, off uintptr) uint32 { return *(*uint32)(unsafe.Add(p, off)) }
func i32(p unsafe.Pointer, off uintptr) int32  { return *(*int32)(unsafe.Add(p, off)) }
func u64(p unsafe.Pointer, off uintptr) uint64 { return *(*uint64)(unsafe.Add(p, off)) }
func ptr(p unsafe.Pointer, off uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Add(p, off))
}

// batchSize is how many records the sink gets at most per call.
const batchSize = 1024

// maxNames bounds the name caches; past it they start over, so a program
// that JIT-compiles endless distinct kernels cannot grow them forever.
const maxNames = 1 << 16

// parser turns activity buffers into Records. It runs only on the drain
// goroutine (or a benchmark), so it needs no locks.
type parser struct {
	lib *library
	// Fields outside the shared prefix, read only when the layout has them.
	graphIDs, deviceLaunched bool

	walker *C.dpc_walker // C memory: the walk state and record addresses
	batch  []Record
	emit   func([]Record)

	// kernelNames maps CUPTI's name pointers (one per kernel, shared by all
	// its records) to Go strings, so names cost a map lookup, not an
	// allocation.
	kernelNames map[uintptr]string
	apiNames    map[uint64]string

	maxRecords int64
	delivered  int64
	overLimit  int64
	unknown    int64
	walkErrors int64
	perKind    [numKinds]int64
}

func newParser(lib *library, layout string, maxRecords int64, emit func([]Record)) *parser {
	return &parser{
		lib:            lib,
		graphIDs:       layoutAtLeast(layout, "11.8"),
		deviceLaunched: layoutAtLeast(layout, "13"),
		walker:         (*C.dpc_walker)(C.calloc(1, C.sizeof_dpc_walker)),
		batch:          make([]Record, 0, batchSize),
		emit:           emit,
		kernelNames:    make(map[uintptr]string),
		apiNames:       make(map[uint64]string),
		maxRecords:     maxRecords,
	}
}

// close frees the parser's C memory.
func (p *parser) close() {
	C.free(unsafe.Pointer(p.walker))
	p.walker = nil
}

// parseBuffer parses the valid bytes of one completed buffer. Records go to
// the batch, which is emitted whenever it is full; call flush to emit the
// rest.
func (p *parser) parseBuffer(buf unsafe.Pointer, valid uintptr) {
	w := p.walker
	w.buffer = (*C.uint8_t)(buf)
	w.valid = C.size_t(valid)
	w.cursor = nil
	for {
		n := int(C.dpc_walk(p.lib.c, w))
		for _, r := range w.records[:n] {
			p.record(r)
		}
		if n < C.DPC_WALK_CHUNK {
			break
		}
	}
	if w.status != C.DPC_ERROR_MAX_LIMIT_REACHED && w.status != C.DPC_SUCCESS {
		p.walkErrors++
	}
}

// flush hands the batched records to the sink.
func (p *parser) flush() {
	if len(p.batch) > 0 {
		p.emit(p.batch)
		p.batch = p.batch[:0]
	}
}

// record parses one record into the batch.
func (p *parser) record(r unsafe.Pointer) {
	var k Kind
	switch u32(r, 0) {
	case C.DPC_KIND_CONCURRENT_KERNEL, C.DPC_KIND_KERNEL:
		k = KindKernel
	case C.DPC_KIND_MEMCPY:
		k = KindMemcpy
	case C.DPC_KIND_MEMCPY2:
		k = KindMemcpyPeer
	case C.DPC_KIND_MEMSET:
		k = KindMemset
	case C.DPC_KIND_MEMORY2:
		k = KindMemory
	case C.DPC_KIND_SYNCHRONIZATION:
		k = KindSync
	case C.DPC_KIND_RUNTIME:
		k = KindRuntime
	case C.DPC_KIND_DRIVER:
		k = KindDriver
	case C.DPC_KIND_OVERHEAD:
		k = KindOverhead
	case C.DPC_KIND_EXTERNAL_CORRELATION:
		k = KindExternalCorrelation
	default:
		p.unknown++
		return
	}
	if p.maxRecords > 0 && p.delivered >= p.maxRecords {
		p.overLimit++
		return
	}
	if len(p.batch) == cap(p.batch) {
		p.flush()
	}
	p.batch = append(p.batch, Record{Kind: k})
	o := &p.batch[len(p.batch)-1]
	p.delivered++
	p.perKind[k]++

	switch k {
	case KindKernel:
		o.Registers = u16(r, offKernelRegisters)
		o.Start = u64(r, offKernelStart)
		o.End = u64(r, offKernelEnd)
		o.DeviceID = u32(r, offKernelDevice)
		o.ContextID = u32(r, offKernelContext)
		o.StreamID = u32(r, offKernelStream)
		for i := range 3 {
			o.Grid[i] = i32(r, offKernelGridX+4*uintptr(i))
			o.Block[i] = i32(r, offKernelBlockX+4*uintptr(i))
		}
		o.StaticShared = i32(r, offKernelStaticShared)
		o.DynamicShared = i32(r, offKernelDynamicShared)
		o.CorrelationID = u32(r, offKernelCorrelation)
		o.Name = p.kernelName(ptr(r, offKernelName))
		if p.graphIDs {
			o.GraphID = u32(r, offKernelGraphID)
		}
		if p.deviceLaunched {
			o.DeviceLaunched = u8(r, offKernelDeviceLaunched) != 0
		}
	case KindMemcpy:
		o.CopyKind = u8(r, offMemcpyCopyKind)
		o.SrcKind = u8(r, offMemcpySrcKind)
		o.DstKind = u8(r, offMemcpyDstKind)
		o.Bytes = u64(r, offMemcpyBytes)
		o.Start = u64(r, offMemcpyStart)
		o.End = u64(r, offMemcpyEnd)
		o.DeviceID = u32(r, offMemcpyDevice)
		o.ContextID = u32(r, offMemcpyContext)
		o.StreamID = u32(r, offMemcpyStream)
		o.CorrelationID = u32(r, offMemcpyCorrelation)
		o.Name = memcpyName(o.CopyKind)
		if p.graphIDs {
			o.GraphID = u32(r, offMemcpyGraphID)
		}
		if p.deviceLaunched {
			o.DeviceLaunched = u8(r, offMemcpyDeviceLaunched) != 0
		}
	case KindMemcpyPeer:
		o.CopyKind = u8(r, offPtoPCopyKind)
		o.SrcKind = u8(r, offPtoPSrcKind)
		o.DstKind = u8(r, offPtoPDstKind)
		o.Bytes = u64(r, offPtoPBytes)
		o.Start = u64(r, offPtoPStart)
		o.End = u64(r, offPtoPEnd)
		o.DeviceID = u32(r, offPtoPDevice)
		o.ContextID = u32(r, offPtoPContext)
		o.StreamID = u32(r, offPtoPStream)
		o.SrcDevice = u32(r, offPtoPSrcDevice)
		o.DstDevice = u32(r, offPtoPDstDevice)
		o.CorrelationID = u32(r, offPtoPCorrelation)
		o.Name = memcpyName(o.CopyKind)
	case KindMemset:
		o.MemsetValue = u32(r, offMemsetValue)
		o.Bytes = u64(r, offMemsetBytes)
		o.Start = u64(r, offMemsetStart)
		o.End = u64(r, offMemsetEnd)
		o.DeviceID = u32(r, offMemsetDevice)
		o.ContextID = u32(r, offMemsetContext)
		o.StreamID = u32(r, offMemsetStream)
		o.CorrelationID = u32(r, offMemsetCorrelation)
		o.MemoryKind = uint8(u16(r, offMemsetMemoryKind))
		o.Name = "Memset"
		if p.graphIDs {
			o.GraphID = u32(r, offMemsetGraphID)
		}
		if p.deviceLaunched {
			o.DeviceLaunched = u8(r, offMemsetDeviceLaunched) != 0
		}
	case KindMemory:
		o.MemoryOp = uint8(u32(r, offMemoryOperation))
		o.MemoryKind = uint8(u32(r, offMemoryKind))
		o.CorrelationID = u32(r, offMemoryCorrelation)
		o.Address = u64(r, offMemoryAddress)
		o.Bytes = u64(r, offMemoryBytes)
		o.Start = u64(r, offMemoryTimestamp)
		o.End = o.Start
		o.ProcessID = u32(r, offMemoryProcess)
		o.DeviceID = u32(r, offMemoryDevice)
		o.ContextID = u32(r, offMemoryContext)
		o.StreamID = u32(r, offMemoryStream)
		o.Name = MemoryOpName(o.MemoryOp)
	case KindSync:
		o.SyncType = u32(r, offSyncType)
		o.Start = u64(r, offSyncStart)
		o.End = u64(r, offSyncEnd)
		o.CorrelationID = u32(r, offSyncCorrelation)
		o.ContextID = u32(r, offSyncContext)
		o.StreamID = u32(r, offSyncStream)
		o.Name = SyncTypeName(o.SyncType)
	case KindRuntime, KindDriver:
		o.CBID = u32(r, offAPICBID)
		o.Start = u64(r, offAPIStart)
		o.End = u64(r, offAPIEnd)
		o.ProcessID = u32(r, offAPIProcess)
		o.ThreadID = u32(r, offAPIThread)
		o.CorrelationID = u32(r, offAPICorrelation)
		o.ReturnValue = int32(u32(r, offAPIReturn))
		domain := uint32(C.DPC_CB_DOMAIN_RUNTIME_API)
		if k == KindDriver {
			domain = C.DPC_CB_DOMAIN_DRIVER_API
		}
		o.Name = p.apiName(domain, o.CBID)
	case KindExternalCorrelation:
		o.ExternalKind = u32(r, offExtKind)
		o.ExternalID = u64(r, offExtID)
		o.CorrelationID = u32(r, offExtCorrelation)
	case KindOverhead:
		o.OverheadKind = u32(r, offOverheadKind)
		o.Start = u64(r, offOverheadStart)
		o.End = u64(r, offOverheadEnd)
		o.Name = OverheadKindName(o.OverheadKind)
		id := offOverheadObjectID
		switch u32(r, offOverheadObjectKind) {
		case C.DPC_OBJECT_KIND_PROCESS, C.DPC_OBJECT_KIND_THREAD:
			o.ProcessID = u32(r, uintptr(id))
			o.ThreadID = u32(r, uintptr(id+4))
		case C.DPC_OBJECT_KIND_DEVICE, C.DPC_OBJECT_KIND_CONTEXT, C.DPC_OBJECT_KIND_STREAM:
			o.DeviceID = u32(r, uintptr(id))
			o.ContextID = u32(r, uintptr(id+4))
			o.StreamID = u32(r, uintptr(id+8))
		}
	}
}

// kernelName returns the Go string for a CUPTI-owned C string. A cached
// entry is checked against the bytes before use: CUPTI may free a module's
// names when it is unloaded, and the address can come back holding
// another name.
func (p *parser) kernelName(s unsafe.Pointer) string {
	if s == nil {
		return ""
	}
	key := uintptr(s)
	if name, ok := p.kernelNames[key]; ok && sameCString(s, name) {
		return name
	}
	if len(p.kernelNames) >= maxNames {
		clear(p.kernelNames)
	}
	name := C.GoString((*C.char)(s))
	p.kernelNames[key] = name
	return name
}

// sameCString reports whether the NUL-terminated string at s equals name,
// without allocating.
func sameCString(s unsafe.Pointer, name string) bool {
	b := unsafe.Slice((*byte)(s), len(name)+1)
	return b[len(name)] == 0 && string(b[:len(name)]) == name
}

// apiName names a runtime or driver API callback id, once per id.
func (p *parser) apiName(domain, cbid uint32) string {
	key := uint64(domain)<<32 | uint64(cbid)
	if name, ok := p.apiNames[key]; ok {
		return name
	}
	if len(p.apiNames) >= maxNames {
		clear(p.apiNames)
	}
	var cname *C.char
	name := ""
	if C.dpc_callback_name(p.lib.c, C.uint32_t(domain), C.uint32_t(cbid), &cname) == C.DPC_SUCCESS && cname != nil {
		name = trimVersionTag(C.GoString(cname))
	}
	if name == "" {
		name = "cbid " + strconv.FormatUint(uint64(cbid), 10)
	}
	p.apiNames[key] = name
	return name
}
