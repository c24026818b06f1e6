package supervisor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// maxSockPath is the longest socket path the kernel takes (sun_path holds
// 108 bytes with the NUL).
const maxSockPath = 107

// checkSockPath accepts any directory: a path too long for the socket is
// reached through /proc/self/fd.
func checkSockPath(dir string) error { return nil }

// withSockPath calls fn with a path of dir's socket short enough to bind
// or connect to: a deep state directory is reached through a descriptor
// of it, /proc/self/fd/N/ctl.sock.
func withSockPath(dir string, fn func(path string) error) error {
	path := filepath.Join(dir, sockFile)
	if len(path) <= maxSockPath {
		return fn(path)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), sockFile))
}

func dialCtl(ctx context.Context, dir string) (net.Conn, error) {
	var conn net.Conn
	err := withSockPath(dir, func(path string) (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "unix", path)
		return err
	})
	return conn, err
}

func listenCtl(dir string) (*net.UnixListener, error) {
	var l *net.UnixListener
	err := withSockPath(dir, func(path string) (err error) {
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, err
	}
	// The path may be a /proc one, gone with its descriptor; the
	// supervisor removes the socket by its real name.
	l.SetUnlinkOnClose(false)
	return l, nil
}
