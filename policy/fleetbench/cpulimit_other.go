//go:build !linux

package fleetbench

import "errors"

// cpuLimit needs Linux control groups.
type cpuLimit struct{}

func newCPULimit(string, float64) (*cpuLimit, error) {
	return nil, errors.New("limiting a daemon's CPU needs Linux control groups (run with DaemonCPU 0)")
}

func (*cpuLimit) add(int) error { return nil }
func (*cpuLimit) remove() error { return nil }

func ownCPUGroup() (string, bool, error) {
	return "", false, errors.New("control groups are Linux's")
}
