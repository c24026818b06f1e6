//go:build !(darwin || linux)

package bus

// diskMeasured: the guard cannot measure free space here.
const diskMeasured = false

// statDisk cannot measure here: the guard logs that once and sets no limit,
// so the server's own limit and errors apply.
var statDisk statFunc = func(string) (free, size uint64, err error) {
	return 0, 0, errNoStatfs
}
