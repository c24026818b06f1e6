//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package benchkit

// SettleDisk does nothing where there is no sync(2).
func SettleDisk() {}
