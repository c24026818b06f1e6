package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// tokenKeys is the duplicate-key check done through json.Decoder's
// tokens: slow, but its reading of keys is the decoder's own, so
// checkKeys must agree with it on every valid body.
func tokenKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var path []string
	err := tokenWalk(dec, &path)
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

func tokenWalk(dec *json.Decoder, path *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	open, ok := tok.(json.Delim)
	if !ok || (open != '{' && open != '[') {
		return nil
	}
	if len(*path) >= maxBodyDepth {
		return invalidField("(body)", nil, "objects and arrays nest deeper than %d levels (want at most %d)", maxBodyDepth, maxBodyDepth)
	}
	seen := map[string]struct{}{}
	for i := 0; dec.More(); i++ {
		seg := "[" + strconv.Itoa(i) + "]"
		if open == '{' {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			seg = key
			if _, dup := seen[key]; dup {
				field := clip(jsonPath(append(*path, key)), maxFieldLen)
				return invalidField(field, nil, "key %q appears more than once in the same object (want each key once)", clip(key, maxFieldLen))
			}
			seen[key] = struct{}{}
		}
		*path = append(*path, seg)
		err := tokenWalk(dec, path)
		*path = (*path)[:len(*path)-1]
		if err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// keysCorpus are bodies that reach every branch of checkKeys.
var keysCorpus = []string{
	`{}`, `[]`, `"s"`, `12`, `null`, ` {"a" : 1 , "b":[1,{"a":2}] } `,
	`{"a":1,"a":2}`,
	`{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`,
	`{"a\u0062":1,"ab":2}`,
	`{"a\"b":1,"a\"b":2}`,
	`{"\ud83d\ude00":1,"😀":2}`,
	"{\"\xff\":1,\"\xfe\":2}",
	`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k3":2}`,
	`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k17":2}`,
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	`{"a":` + strings.Repeat(`{"b":`, 70) + "1" + strings.Repeat("}", 71),
	`{"a":[1,2,{"x":true,"y":false,"x":null}]}`,
	`{"a":1,"b":{"a":1}}`,
	`{"a":1,"a"`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `[1,,2]`, `{"a":"unterminated`, `{`, ``, `{"a":1} {"a":1,"a":2}`,
}

// TestCheckKeysAgreesWithTheDecoder: on every valid body the byte walk
// refuses what the token walk refuses, with the same field and message,
// and accepts what it accepts.
func TestCheckKeysAgreesWithTheDecoder(t *testing.T) {
	for _, body := range keysCorpus {
		agreeOnKeys(t, []byte(body))
	}
	if got := described(checkKeys([]byte(`{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`))); !strings.HasPrefix(got, "a.b[1].c: ") {
		t.Errorf("checkKeys of a duplicate in an array's object = %q, want it named a.b[1].c", got)
	}
}

// agreeOnKeys fails t when checkKeys and tokenKeys disagree on a valid
// body. A malformed one only has to be walked without a panic: the
// decoder that comes after reports it.
func agreeOnKeys(t *testing.T, data []byte) {
	t.Helper()
	got := checkKeys(data)
	if !json.Valid(data) {
		return
	}
	if got, want := described(got), described(tokenKeys(data)); got != want {
		t.Errorf("checkKeys(%q) = %q, want %q", data, got, want)
	}
}

// described is an error of the key check as a client sees it, field and
// message; "" for none.
func described(err error) string {
	var ae *apiError
	if !errors.As(err, &ae) {
		return ""
	}
	return ae.field + ": " + ae.message
}

// FuzzCheckKeys compares the byte walk with the token walk on any input.
func FuzzCheckKeys(f *testing.F) {
	for _, body := range keysCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(agreeOnKeys)
}

// BenchmarkCheckKeys walks an observation body like the API's busiest
// route takes.
func BenchmarkCheckKeys(b *testing.B) {
	body := []byte(`{"observationId":"obs-12345","source":"mcp","confidence":"high","signal":{"type":"progress","payload":{"summary":"` + strings.Repeat("x", 256) + `"}}}`)
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			if err := checkKeys(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		for b.Loop() {
			if err := tokenKeys(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
