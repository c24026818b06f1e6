//go:build darwin || linux

package bus

import "syscall"

// diskMeasured: the guard can measure free space here.
const diskMeasured = true

// statDisk returns the bytes free for unprivileged writers and the size of
// the file system holding dir.
var statDisk statFunc = func(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
