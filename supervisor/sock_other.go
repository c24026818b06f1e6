//go:build !linux

package supervisor

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
)

// maxSockPath is the longest socket path the BSDs and macOS take (sun_path
// holds 104 bytes with the NUL).
const maxSockPath = 103

// checkSockPath refuses a state directory too deep for its socket: only
// Linux can reach one through /proc/self/fd.
func checkSockPath(dir string) error {
	if path := filepath.Join(dir, sockFile); len(path) > maxSockPath {
		return fmt.Errorf("state directory %s is too deep: its control socket path is %d bytes (want at most %d)", dir, len(path), maxSockPath)
	}
	return nil
}

func dialCtl(ctx context.Context, dir string) (net.Conn, error) {
	if err := checkSockPath(dir); err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", filepath.Join(dir, sockFile))
}

func listenCtl(dir string) (*net.UnixListener, error) {
	if err := checkSockPath(dir); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, sockFile), Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}
