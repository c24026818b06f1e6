package datadir

import (
	"fmt"
	"path/filepath"
)

// Env names the environment variable that sets the data directory.
const Env = "AGENTJOURNAL_DATA"

// Default is $AGENTJOURNAL_DATA, else $XDG_DATA_HOME/agentjournal, else
// ~/.local/share/agentjournal. getenv and home are os.Getenv and
// os.UserHomeDir, or a test's.
func Default(getenv func(string) string, home func() (string, error)) (string, error) {
	if dir := getenv(Env); dir != "" {
		return dir, nil
	}
	if xdg := getenv("XDG_DATA_HOME"); xdg != "" {
		return filepath.Join(xdg, "agentjournal"), nil
	}
	h, err := home()
	if err != nil {
		return "", fmt.Errorf("find the data directory: %w (set --data or $%s)", err, Env)
	}
	return filepath.Join(h, ".local", "share", "agentjournal"), nil
}
