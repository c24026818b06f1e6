//go:build !(darwin || linux)

package bus

// diskMeasured: the guard cannot measure free space here.
const diskMeasured = false

// statDisk cannot measure here; no guard runs, and nats-server's own limit
// applies.
var statDisk statFunc = func(string) (free, size uint64, err error) {
	return 0, 0, errNoStatfs
}
