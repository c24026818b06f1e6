package wire

import "time"

// Hosts is the answer of GET /v1/hosts: the hosts of the fleet that shares
// the daemon's log, as the daemon that answered sees them.
type Hosts struct {
	// Self is the host that answered.
	Self  string `json:"self"`
	Hosts []Host `json:"hosts"`
}

// Host is one host of the fleet.
type Host struct {
	Name string `json:"name"`
	// State is live (heard from within its lease), lost (not heard from
	// for longer) or left (it closed and said so).
	State  string            `json:"state"`
	Self   bool              `json:"self,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Profiles are the names of its environment profiles.
	Profiles []string `json:"profiles,omitempty"`
	// Started is when its daemon started; LastHeard when the answering
	// daemon last heard from it, by its own clock.
	Started   time.Time `json:"started"`
	LastHeard time.Time `json:"lastHeard"`
	LeaseMs   int64     `json:"leaseMs"`
	// MaxRunning is how many agents it runs at once; Running how many run
	// there; Queued how many of the launches it took wait in the fleet's
	// queue (which any host with room starts from).
	MaxRunning int `json:"maxRunning"`
	Running    int `json:"running"`
	Queued     int `json:"queued"`
	// MemoryFree and MemoryTotal are its machine's available and total
	// memory in bytes, absent where its system does not say.
	MemoryFree  uint64 `json:"memoryFree,omitempty"`
	MemoryTotal uint64 `json:"memoryTotal,omitempty"`
	// Executions are the executions with a live process there, as of its
	// last heartbeat.
	Executions []string `json:"executions"`
}
