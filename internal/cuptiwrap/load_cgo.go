//go:build cgo

package cuptiwrap

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// library is a loaded libcupti and its function table. Libraries are never
// unloaded once a CUPTI call beyond cuptiGetVersion was made: CUPTI starts
// threads and keeps our callback pointers.
type library struct {
	c    *C.dpc_lib
	info LibraryInfo
}

var libs struct {
	sync.Mutex
	byPlace  map[string]*library
	byHandle map[unsafe.Pointer]*library
}

// load finds and loads libcupti as Options and the environment say.
func load(library string) (*library, error) {
	places, explicit := searchPlaces(library, os.Getenv)
	return loadFrom(places, explicit)
}

func loadFrom(places []place, explicit bool) (*library, error) {
	libs.Lock()
	defer libs.Unlock()
	if libs.byPlace == nil {
		libs.byPlace = map[string]*library{}
		libs.byHandle = map[unsafe.Pointer]*library{}
	}
	var tried []Attempt
	for _, p := range places {
		if p.reason != "" {
			tried = append(tried, Attempt{Place: p.path, Reason: p.reason})
			continue
		}
		if l := libs.byPlace[p.path]; l != nil {
			return l, nil
		}
		l, reason := open(p.path)
		if l != nil {
			libs.byPlace[p.path] = l
			return l, nil
		}
		tried = append(tried, Attempt{Place: p.path, Reason: reason})
	}
	return nil, &LoadError{Explicit: explicit, Tried: tried}
}

// open loads one candidate; on failure it says why in one line.
// Called with libs locked.
func open(path string) (*library, string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	h := C.dpc_dlopen(cpath, &cerr)
	if h == nil {
		reason := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		// dlerror repeats the path; keep only the reason.
		reason = strings.TrimPrefix(reason, path+": ")
		return nil, reason
	}
	if l := libs.byHandle[h]; l != nil {
		// The same file under another name (a symlink, a soname):
		// dlopen only bumped its reference count.
		C.dpc_dlclose(h)
		return l, ""
	}
	var req, opt [512]C.char
	cl := C.dpc_bind(h, &req[0], C.size_t(len(req)), &opt[0], C.size_t(len(opt)))
	if cl == nil {
		C.dpc_dlclose(h)
		return nil, "out of memory"
	}
	if missing := C.GoString(&req[0]); missing != "" {
		C.free(unsafe.Pointer(cl))
		C.dpc_dlclose(h)
		return nil, "not a usable libcupti: lacks " + missing + " (CUPTI from CUDA 11.0 or later is needed)"
	}
	var version C.uint32_t
	if r := C.dpc_get_version(cl, &version); r != C.DPC_SUCCESS {
		C.free(unsafe.Pointer(cl))
		C.dpc_dlclose(h)
		return nil, fmt.Sprintf("cuptiGetVersion failed: %s", resultName(nil, int(r)))
	}
	info := LibraryInfo{Path: path, APIVersion: uint32(version)}
	if p := C.dpc_loaded_path(h); p != nil {
		info.Resolved = C.GoString(p)
		C.free(unsafe.Pointer(p))
		if real, err := filepath.EvalSymlinks(info.Resolved); err == nil {
			info.Resolved = real
		}
	}
	info.Soname = readSoname(info.Resolved)
	info.Layout = layoutFor(info.APIVersion, info.Soname, info.Resolved)
	if o := C.GoString(&opt[0]); o != "" {
		info.MissingOptional = strings.Fields(o)
	}
	l := &library{c: cl, info: info}
	libs.byHandle[h] = l
	return l, ""
}

// readSoname returns the DT_SONAME of the ELF file at path, or "".
func readSoname(path string) string {
	if path == "" {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(s) == 0 {
		return ""
	}
	return s[0]
}

// resultName names a CUptiResult, asking the library for codes devprof
// has no name for.
func resultName(l *library, code int) string {
	if n, ok := resultNames[code]; ok {
		return n
	}
	if l != nil {
		if s := C.dpc_result_string(l.c, C.dpc_result(code)); s != nil {
			return C.GoString(s)
		}
	}
	return fmt.Sprintf("CUPTI_ERROR_%d", code)
}

// describe returns the library's info with the API version and layout
// asked afresh (a Start after a library upgrade in place is not a concern,
// but the test double changes version between sessions).
func (l *library) describe() (LibraryInfo, error) {
	info := l.info
	info.MissingOptional = append([]string(nil), l.info.MissingOptional...)
	var version C.uint32_t
	if err := l.check("cuptiGetVersion", C.dpc_get_version(l.c, &version), ""); err != nil {
		return info, err
	}
	info.APIVersion = uint32(version)
	info.Layout = layoutFor(info.APIVersion, info.Soname, info.Resolved)
	return info, nil
}

// timestamp calls cuptiGetTimestamp.
func (l *library) timestamp() (uint64, error) {
	var ts C.uint64_t
	if err := l.check("cuptiGetTimestamp", C.dpc_get_timestamp(l.c, &ts), ""); err != nil {
		return 0, err
	}
	return uint64(ts), nil
}

// check turns a CUptiResult into nil or an [*Error].
func (l *library) check(op string, r C.dpc_result, detail string) error {
	if r == C.DPC_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(r), Name: resultName(l, int(r)), Detail: detail}
}
