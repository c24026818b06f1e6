package bus

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// MinSecretLength is the shortest Secret a listening server accepts.
const MinSecretLength = 32

// LoadOrCreateSecret returns the NATS secret kept in path, creating it (32
// random bytes, hex, mode 0600) when the file does not exist. A file that
// others can read, or that holds a secret too short to trust, is refused.
func LoadOrCreateSecret(path string) (string, error) {
	secret, err := LoadSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret = hex.EncodeToString(b[:])
	if err := durable.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("create the nats secret %s: %w", path, err)
	}
	return secret, nil
}

// LoadSecret reads the NATS secret kept in path.
func LoadSecret(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the nats secret %s can be read by others (mode %o): chmod 600 it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(data))
	if len(secret) < MinSecretLength || strings.ContainsAny(secret, " \t\r\n:@/") {
		return "", fmt.Errorf("the nats secret %s is not one word of at least %d characters without ':', '@' or '/'", path, MinSecretLength)
	}
	return secret, nil
}
