package atomicfile

import (
	"os"
	"syscall"
)

// startWriteback asks Linux to start writing n bytes of f from off to
// disk without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE): the sync in Commit, which is what makes the
// file durable, then has less left to wait for. Errors are ignored (a
// file system without it just syncs everything in Commit).
func startWriteback(f *os.File, off, n int64) {
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
		writebacks.Add(1)
	})
}
