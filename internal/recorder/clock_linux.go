package recorder

import (
	"syscall"
	"unsafe"
)

const clockBoottime = 7 // CLOCK_BOOTTIME

// boottime reads CLOCK_BOOTTIME, the clock Perfetto traces default to.
func boottime() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}
