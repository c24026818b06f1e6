package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Layout is the data directory's layout: every file and directory the
// daemon, the run command and the client commands keep under it is named
// here and nowhere else. The names are on users' disks: never rename one.
type Layout struct {
	// Dir is the data directory.
	Dir string
}

// Bus is the directory handed to the bus (bus.Config.DataDir), which keeps
// its own files in it: the JetStream store (NATSStore), the directory lock
// and a cluster node's name (ServerName).
func (l Layout) Bus() string { return l.Dir }

// NATSStore is where the embedded NATS keeps the log (JetStream's files).
// The bus names it; TestLayoutMatchesTheBus holds this equal.
func (l Layout) NATSStore() string { return filepath.Join(l.Dir, "nats") }

// ServerName is the file holding a cluster node's name, which the bus
// creates on the node's first start.
func (l Layout) ServerName() string { return filepath.Join(l.Dir, "server-name") }

// NATSSecret is the secret a listening NATS requires of its clients,
// created 0600 by the daemon whose NATS listens.
func (l Layout) NATSSecret() string { return filepath.Join(l.Dir, "nats-secret") }

// TokenFile is the API token's file, created 0600 on first start.
func (l Layout) TokenFile() string { return filepath.Join(l.Dir, "api-token") }

// ScopedTokenSecret is the secret that signs the tokens scoped to one
// execution, which launched agents get.
func (l Layout) ScopedTokenSecret() string { return filepath.Join(l.Dir, "scoped-token.secret") }

// DaemonInfo is the file that tells the client commands where the daemon
// of this data directory listens (Info); it exists while one serves.
func (l Layout) DaemonInfo() string { return filepath.Join(l.Dir, "daemon.json") }

// Projections is the read models' bbolt file.
func (l Layout) Projections() string { return filepath.Join(l.Dir, "projections", "agentjournal.db") }

// SearchIndex is the full-text index's directory, beside the read models.
func (l Layout) SearchIndex() string { return filepath.Join(l.Dir, "projections", "search.bleve") }

// Recordings holds the terminal lanes' recordings (asciicast v2).
func (l Layout) Recordings() string { return filepath.Join(l.Dir, "terminal-recordings") }

// Output holds each execution's plain output (runtime/outputlog).
func (l Layout) Output() string { return filepath.Join(l.Dir, "agent-output") }

// Hosted holds a file for every execution launched here and not seen to
// end, so that a restart after a crash recovers exactly those.
func (l Layout) Hosted() string { return filepath.Join(l.Dir, "hosted") }

// Queue keeps the queued and scheduled launches waiting to start.
func (l Layout) Queue() string { return filepath.Join(l.Dir, "queue") }

// Supervised holds a state directory per supervised agent, where its
// supervisor keeps its pipes and spools its output.
func (l Layout) Supervised() string { return filepath.Join(l.Dir, "supervised") }

// Workspaces is the directory handed to the runtime for forks' work trees
// (runtime.Config.WorkspaceDir; the workspace package keeps them in its
// worktrees directory).
func (l Layout) Workspaces() string { return l.Dir }

// Info is the content of the DaemonInfo file.
type Info struct {
	URL       string    `json:"url"`
	PID       int       `json:"pid"`
	TokenFile string    `json:"tokenFile"`
	NATSURL   string    `json:"natsUrl,omitempty"`
	Started   time.Time `json:"started"`
}

// ErrBadInfo reports a DaemonInfo file that does not decode: a daemon is
// writing it right now, or died while writing it.
var ErrBadInfo = errors.New("daemon: the daemon info file does not decode")

// ReadInfo reads the DaemonInfo file. It returns the file's error as
// os.ReadFile does (fs.ErrNotExist when no daemon wrote one), and
// ErrBadInfo for content that does not decode.
func (l Layout) ReadInfo() (Info, error) {
	var info Info
	data, err := os.ReadFile(l.DaemonInfo())
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("%w: %s: %w", ErrBadInfo, l.DaemonInfo(), err)
	}
	return info, nil
}

// writeInfo writes the DaemonInfo file, 0600.
func (l Layout) writeInfo(info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(l.DaemonInfo(), append(data, '\n'), 0o600)
}
