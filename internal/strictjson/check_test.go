package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	dups := Checks{Duplicates: true, MaxDepth: 64}
	plain := Checks{Plain: true}
	dup := func(key string, path ...string) error { return &DuplicateKeyError{Path: path, Key: key} }
	cases := []struct {
		name, data string
		checks     Checks
		want       error
	}{
		{"empty object", `{}`, dups, nil},
		{"scalars", ` "s" `, dups, nil},
		{"white space everywhere", " {\"a\" : 1 ,\n\"b\":[1,{\"a\":2}] }\t", dups, nil},
		{"duplicate", `{"a":1,"a":2}`, dups, dup("a")},
		{"duplicates allowed", `{"a":1,"a":2}`, Checks{}, nil},
		{"duplicate in an array's object", `{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`, dups, dup("c", "a", "b", "[1]")},
		{"same key in two objects", `{"a":1,"b":{"a":1}}`, dups, nil},
		{"escaped duplicate", `{"a\u0062":1,"ab":2}`, dups, dup("ab")},
		{"surrogate pair against its rune", `{"\ud83d\ude00":1,"😀":2}`, dups, dup("😀")},
		{"two bytes that are not UTF-8 meet at U+FFFD", "{\"\xff\":1,\"\xfe\":2}", dups, dup("\uFFFD")},
		{"duplicate after the inline keys", `{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k17":2}`, dups, dup("k17")},
		{"first duplicate in the text wins", `{"x":{"a":1,"a":2},"b":1,"b":2}`, dups, dup("a", "x")},
		{"duplicate before malformed text", `{"a":1,"a":2,}`, dups, dup("a")},
		{"malformed text before a duplicate", `{"a":01,"a":2}`, dups, ErrSyntax},
		{"64 levels", strings.Repeat("[", 64) + strings.Repeat("]", 64), dups, nil},
		{"65 levels", strings.Repeat("[", 65) + strings.Repeat("]", 65), dups, ErrTooDeep},
		{"too deep inside objects", `{"a":` + strings.Repeat(`{"b":`, 70) + "1" + strings.Repeat("}", 71), dups, ErrTooDeep},
		{"no bound", strings.Repeat("[", 200) + strings.Repeat("]", 200), Checks{}, nil},

		{"empty", ``, Checks{}, ErrSyntax},
		{"trailing value", `{} {}`, Checks{}, ErrSyntax},
		{"trailing NUL", "{}\x00", Checks{}, ErrSyntax},
		{"missing value", `{"a":}`, Checks{}, ErrSyntax},
		{"missing colon", `{"a" 1}`, Checks{}, ErrSyntax},
		{"trailing comma", `[1,]`, Checks{}, ErrSyntax},
		{"unterminated string", `{"a":"x`, Checks{}, ErrSyntax},
		{"escape JSON lacks", `"\q"`, Checks{}, ErrSyntax},
		{"short \\u escape", `"\u12"`, Checks{}, ErrSyntax},
		{"lone minus", `-`, Checks{}, ErrSyntax},
		{"leading zero", `01`, Checks{}, ErrSyntax},
		{"number forms", `[0,-0,1.5,-2e10,3E+2,4e-1]`, Checks{}, nil},
		{"bare word", `nul`, Checks{}, ErrSyntax},

		{"not UTF-8", "\"a\xffb\"", plain, ErrNotPlain},
		{"not UTF-8 let pass", "\"a\xffb\"", Checks{}, nil},
		{"not UTF-8 in a key", "{\"\xff\":1}", plain, ErrNotPlain},
		{"lone high surrogate", `"\ud800x"`, plain, ErrNotPlain},
		{"lone high surrogate let pass", `"\ud800x"`, Checks{}, nil},
		{"high surrogate before another escape", `"\ud800\u0041"`, plain, nil},
		{"surrogate pair", `"\ud83d\ude00"`, plain, nil},
		{"UTF-8", `"é😀"`, plain, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check([]byte(c.data), c.checks)
			if !sameError(got, c.want) {
				t.Errorf("Check(%q) = %v, want %v", c.data, got, c.want)
			}
		})
	}
}

// sameError compares sentinels by identity and duplicates by key and path.
func sameError(got, want error) bool {
	var g, w *DuplicateKeyError
	if errors.As(want, &w) {
		return errors.As(got, &g) && g.Key == w.Key && slices.Equal(g.Path, w.Path) && errors.Is(got, ErrDuplicateKey)
	}
	return got == want
}

// tokenCheck is the duplicate and depth check done through json.Decoder's
// tokens: slow, but its reading of keys is the decoder's own, so Check
// must agree with it on every valid text.
func tokenCheck(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var path []string
	err := tokenWalk(dec, &path, maxDepth)
	if errors.Is(err, ErrTooDeep) || errors.Is(err, ErrDuplicateKey) {
		return err
	}
	return nil
}

func tokenWalk(dec *json.Decoder, path *[]string, maxDepth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	open, ok := tok.(json.Delim)
	if !ok || (open != '{' && open != '[') {
		return nil
	}
	if len(*path) >= maxDepth {
		return ErrTooDeep
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
				return &DuplicateKeyError{Path: slices.Clone(*path), Key: key}
			}
			seen[key] = struct{}{}
		}
		*path = append(*path, seg)
		err := tokenWalk(dec, path, maxDepth)
		*path = (*path)[:len(*path)-1]
		if err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// agree fails t when Check disagrees with encoding/json on data: on valid
// JSON it must find what the token walk finds, and no syntax error;
// under Plain, it may refuse only strings that are not UTF-8 or hold a
// lone high surrogate. What Check accepts encoding/json accepts, but for
// control characters in strings, which Check does not look for.
func agree(t *testing.T, data []byte) {
	t.Helper()
	const maxDepth = 8
	got := Check(data, Checks{Duplicates: true, MaxDepth: maxDepth})
	if !json.Valid(data) {
		if got == nil && !bytes.ContainsFunc(data, func(r rune) bool { return r < 0x20 }) {
			t.Errorf("Check(%q) = nil, but it is not JSON", data)
		}
		return
	}
	want := tokenCheck(data, maxDepth)
	if !sameError(got, want) {
		t.Errorf("Check(%q) = %v, want %v", data, got, want)
	}
	err := Check(data, Checks{Plain: true})
	if err != nil && (err != ErrNotPlain || utf8.Valid(data) && !bytes.Contains(data, []byte(`\u`))) {
		t.Errorf("Check(%q, Plain) = %v on valid JSON", data, err)
	}
}

// checkCorpus reaches every branch of Check.
var checkCorpus = []string{
	`{}`, `[]`, `"s"`, `12`, `null`, ` {"a" : 1 , "b":[1,{"a":2}] } `,
	`{"a":1,"a":2}`, `{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`, `{"a\u0062":1,"ab":2}`, `{"a\"b":1,"a\"b":2}`,
	`{"\ud83d\ude00":1,"😀":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"\ud800":1,"\ud800x":2}`, `"\udbff\udfff"`,
	`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k3":2}`,
	strings.Repeat("[", 8) + strings.Repeat("]", 8), strings.Repeat("[", 9) + strings.Repeat("]", 9),
	`{"a":[1,2,{"x":true,"y":false,"x":null}]}`, `[-0.5e+3,0,1E2]`,
	`{"a":1,"a"`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `[1,,2]`, `{"a":"unterminated`, `{`, ``, `{"a":1} {"a":1,"a":2}`,
	`-`, `01`, `1.`, `.5`, `"\q"`, `"\u12"`, "\"\x01\"", "{\"\x01\":1,\"\x01\":2}",
}

func TestCheckAgreesWithTheDecoder(t *testing.T) {
	for _, data := range checkCorpus {
		agree(t, []byte(data))
	}
}

// FuzzCheck compares Check with encoding/json's tokens on any input.
func FuzzCheck(f *testing.F) {
	for _, data := range checkCorpus {
		f.Add([]byte(data))
	}
	f.Fuzz(agree)
}

func BenchmarkCheck(b *testing.B) {
	body := []byte(`{"observationId":"obs-12345","source":"mcp","confidence":"high","signal":{"type":"progress","payload":{"summary":"` + strings.Repeat("x", 256) + `"}}}`)
	for _, c := range []struct {
		name   string
		checks Checks
	}{
		{"duplicates", Checks{Duplicates: true, MaxDepth: 64}},
		{"plain", Checks{Plain: true, MaxDepth: 1000}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := Check(body, c.checks); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleCheck() {
	err := Check([]byte(`{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`), Checks{Duplicates: true, MaxDepth: 64})
	var dup *DuplicateKeyError
	if errors.As(err, &dup) {
		fmt.Println(dup.Path, dup.Key)
	}
	// Output: [a b [1]] c
}
