package projections

import (
	"os"
	"strings"
	"sync"
)

// bootID names the running boot of the system: it changes when the machine
// (or virtual machine) restarts, and only then, so it is read once.
var bootID = sync.OnceValues(func() (string, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.TrimSpace(string(b))
	return id, err == nil && id != ""
})
