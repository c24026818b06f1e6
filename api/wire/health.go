package wire

// HealthStatus answers GET /healthz without a token: whether the daemon
// serves, and nothing of where or how.
type HealthStatus struct {
	// Status is Health's: ok, damaged or disk_full.
	Status string `json:"status"`
}

// Health answers GET /healthz with the API token.
type Health struct {
	// Status is ok; damaged when the log lacks records the read model
	// holds (Damaged names the journals); disk_full while the disk holding
	// the log is full and writes are refused (Storage says how full).
	Status     string   `json:"status"`
	Checkpoint uint64   `json:"checkpoint"`
	LastOffset uint64   `json:"lastOffset"`
	Lag        uint64   `json:"lag"`
	Damaged    []string `json:"damaged,omitempty"`
	// Storage is the daemon's last measurement of the disk holding its
	// log, when it measures it.
	Storage *Storage `json:"storage,omitempty"`
	// Policy is the daemon's share of the policy's partitions, when the
	// daemons of its log share them (serve --policy-partitions).
	Policy *PolicyShare `json:"policy,omitempty"`
}

// Storage is the disk holding the daemon's log as /healthz shows it.
type Storage struct {
	DataDir      string `json:"dataDir"`
	FreeBytes    uint64 `json:"freeBytes"`
	ReserveBytes uint64 `json:"reserveBytes"`
	Full         bool   `json:"full"`
}

// PolicyShare is a daemon's share of the policy's partitions: its name
// among the daemons of the log, the partitions it decides on now (none
// while it waits for another daemon to let them go) and their number.
type PolicyShare struct {
	Member     string `json:"member"`
	Partitions []int  `json:"partitions"`
	Of         int    `json:"of"`
}
