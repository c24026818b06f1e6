//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package projections

import "os"

// release closes f, for a bbolt handle that failed half way through opening
// or closing.
func release(f *os.File) { _ = f.Close() }
