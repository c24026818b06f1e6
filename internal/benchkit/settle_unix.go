//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package benchkit

import "syscall"

// SettleDisk writes every file's dirty pages out and returns once the
// kernel has. A measurement of latency that includes an fsync calls it
// first: otherwise each fsync queues behind the writeback of what the
// measurement before it wrote (hundreds of MiB of log and projection files),
// which measures that earlier work instead.
func SettleDisk() { syscall.Sync() }
