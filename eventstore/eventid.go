package eventstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/gowebpki/jcs"
)

// EventIDPrefix starts every event id: the hash function's name.
const EventIDPrefix = "sha256:"

// EventID returns the record's content-hashed id, "sha256:<64 hex>": the
// SHA-256 of the record's JSON canonicalized by RFC 8785 (JCS). Export and
// lineage (a fork's forkedFrom.eventId) name records by it.
//
// The hash covers the whole stored record, base fields included: recordId,
// sequence, journalId and occurredAt. Two journals holding the same content
// therefore give different ids, and so do two positions in one journal: an
// event id names one record at one place in the DAG, which is what a fork
// link must pin (a fork at "the second identical message" is not a fork at
// the first). Identical records give identical ids, whatever the key order
// or whitespace of the bytes they were read from.
//
// The id is computed, never stored: a record's stored bytes do not change.
func EventID(r Record) (string, error) {
	data, err := Encode(r)
	if err != nil {
		return "", fmt.Errorf("event id: %w", err)
	}
	return eventIDOfEncoded(data)
}

// EventIDOfJSON returns the event id of a record given as JSON: it is
// decoded strictly (Decode) first, so bytes that are not a valid record get
// no id, and bytes that differ only in key order or whitespace get the same.
func EventIDOfJSON(data []byte) (string, error) {
	r, err := Decode(data)
	if err != nil {
		return "", fmt.Errorf("event id: %w", err)
	}
	return EventID(r)
}

func eventIDOfEncoded(data []byte) (string, error) {
	canon, err := jcs.Transform(data)
	if err != nil {
		return "", fmt.Errorf("event id: canonicalize: %w", err)
	}
	sum := sha256.Sum256(canon)
	return EventIDPrefix + hex.EncodeToString(sum[:]), nil
}

// validEventID reports whether s has the shape of an event id.
func validEventID(s string) bool {
	h, ok := strings.CutPrefix(s, EventIDPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(h) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
