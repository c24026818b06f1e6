package eventstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// MaxIDLength bounds every id (owner ids, execution ids, message ids …) in
// bytes before escaping, so that a subject or file name built from it stays
// well inside filesystem and NATS limits even when every byte is escaped.
const MaxIDLength = 200

// ErrInvalidID reports an id that cannot be used: empty, only dots, too
// long, not UTF-8 or not canonically escaped.
var ErrInvalidID = errors.New("eventstore: invalid id")

// escapeMark introduces an escaped byte. It is outside the set left as it is,
// so escaping stays reversible.
const escapeMark = '%'

const upperHex = "0123456789ABCDEF"

// keep reports whether b is left as it is by EscapeID: [A-Za-z0-9_-].
func keep(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// EscapeID turns an id into one subject token and one file name component.
// Bytes in [A-Za-z0-9_-] stay as they are; every other byte becomes %XX
// (upper-case hex). The result therefore never holds '.', '*', '>', '/',
// white space or "..", and is never empty.
func EscapeID(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	n := 0
	for i := 0; i < len(id); i++ {
		if !keep(id[i]) {
			n++
		}
	}
	if n == 0 {
		return id, nil
	}
	var b strings.Builder
	b.Grow(len(id) + 2*n)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte(escapeMark)
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0x0f])
	}
	return b.String(), nil
}

// UnescapeID reverses EscapeID. It accepts only the canonical form EscapeID
// produces, so every id has exactly one escaped spelling.
func UnescapeID(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty escaped id", ErrInvalidID)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		if c != escapeMark || i+2 >= len(s) {
			return "", fmt.Errorf("%w: %q: byte %q at %d is neither [A-Za-z0-9_-] nor a %%XX escape", ErrInvalidID, s, c, i)
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%w: %q: escape at %d is not %%XX with upper-case hex", ErrInvalidID, s, i)
		}
		v := byte(hi<<4 | lo)
		if keep(v) {
			return "", fmt.Errorf("%w: %q: escape at %d encodes %q, which is never escaped", ErrInvalidID, s, i, v)
		}
		b.WriteByte(v)
		i += 2
	}
	id := b.String()
	if err := checkID(id); err != nil {
		return "", err
	}
	return id, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty (want 1 to %d bytes)", ErrInvalidID, MaxIDLength)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%w: %d bytes (want 1 to %d bytes)", ErrInvalidID, len(id), MaxIDLength)
	case strings.Trim(id, ".") == "":
		// "." and ".." name a directory in a URL path or a file path: a
		// client's /v1/journals/../entries would reach another route.
		return fmt.Errorf("%w: %q is only dots (want an id with at least one other character, e.g. ae-0123)", ErrInvalidID, id)
	}
	if p := utf8Problem(id); p != "" {
		return fmt.Errorf("%w: %q is %s", ErrInvalidID, id, p)
	}
	return nil
}

// utf8Problem says where id stops being UTF-8, or returns "" when it is
// UTF-8 throughout. Records are JSON, whose encoder would store each bad
// byte as U+FFFD, while subjects, file names and derived ids keep the byte:
// the journal would name an id that was never given. So such an id is
// refused rather than repaired.
func utf8Problem(id string) string {
	if utf8.ValidString(id) {
		return ""
	}
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRuneInString(id[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Sprintf("not UTF-8: byte 0x%02X at offset %d (want UTF-8 text)", id[i], i)
		}
		i += n
	}
	return ""
}

// hashID derives a stable id from its parts. The parts are length-prefixed
// so that ("ab","c") and ("a","bc") never collide.
func hashID(prefix string, size int, parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 8
	}
	buf := make([]byte, 0, n)
	for _, p := range parts {
		buf = strconv.AppendInt(buf, int64(len(p)), 10)
		buf = append(buf, ':')
		buf = append(buf, p...)
		buf = append(buf, ';')
	}
	sum := sha256.Sum256(buf)
	return prefix + hex.EncodeToString(sum[:size])
}

// NewAgentExecutionID derives an AgentExecution id from its owner and a seed
// (for example a task attempt or a launch request id): the same inputs give
// the same id, so a repeated launch request lands on the same journal.
func NewAgentExecutionID(owner OwnerEntity, ownerID, seed string) (string, error) {
	if err := owner.validate(); err != nil {
		return "", err
	}
	if err := checkID(ownerID); err != nil {
		return "", fmt.Errorf("owner id: %w", err)
	}
	return hashID("ae-", 12, "agent-execution", string(owner), ownerID, seed), nil
}

// JournalIDFor derives the journal id of an execution's journal from its
// owner and execution id. Every store computes it the same way, so a
// reference can be rebuilt from the subject or file name alone.
func JournalIDFor(owner OwnerEntity, ownerID, agentExecutionID string) string {
	key := journalKey{owner, ownerID, agentExecutionID}
	if id, ok := journalIDs.Load(key); ok {
		return id.(string)
	}
	id := hashID("journal-", 12, "journal", string(owner), ownerID, agentExecutionID)
	if journalIDCount.Add(1) > maxCachedJournalIDs {
		// Bound the cache; a process reading millions of journals simply
		// hashes again.
		journalIDs.Clear()
		journalIDCount.Store(1)
	}
	journalIDs.Store(key, id)
	return id
}

type journalKey struct {
	owner                     OwnerEntity
	ownerID, agentExecutionID string
}

// journalIDs caches JournalIDFor: every append and every decoded record
// checks its journal id, and the hash would otherwise be a fifth of the cost.
var (
	journalIDs     sync.Map
	journalIDCount atomic.Int64
)

const maxCachedJournalIDs = 100_000

// RecordID derives a record id from the record's idempotency key: the
// journal, the record kind and its natural key (a message id, an observation
// id, the observation a decision answers …). Appending the same record twice
// therefore carries the same id and is caught as a duplicate.
func RecordID(journalID string, kind Kind, key string) string {
	return hashID("rec-", 16, journalID, string(kind), key)
}
