package projections

import (
	"os"
	"strings"
)

// bootID names the running boot of the system: it changes when the machine
// (or virtual machine) restarts, and only then.
func bootID() (string, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.TrimSpace(string(b))
	return id, err == nil && id != ""
}
