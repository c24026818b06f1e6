package eventstore

import "github.com/agentjournal/agentjournal/internal/strictjson"

// maxKeyDepth bounds the key check's recursion; deeper input takes the slow
// path.
const maxKeyDepth = 1000

// knownKeys reports whether b is one JSON value, with nothing but white
// space after it, whose object keys all name fields of s exactly, for
// decodeStrict's fast path: go-json's non-stream decoder ignores unknown
// keys. It never says yes for a key that would match a field only ignoring
// case or after unescaping: the slow path decides those as it always has.
//
// It says no, too, for strings the two go-json decoders read apart (Plain):
// the stream decoder turns bytes that are not UTF-8 into U+FFFD, as
// encoding/json does, and the non-stream decoder keeps them; and the
// non-stream decoder looks for the pair of a high surrogate (\ud800 to
// \udbff) 11 bytes on, past the end of its buffer when the input ends
// sooner, which checkptr (-race) stops as an invalid pointer. Its reading
// of numbers is JSON's: go-json's non-stream decoder reads a lone "-" as a
// number, which its stream decoder refuses.
func knownKeys(b []byte, s *strictjson.Shape) bool {
	return strictjson.Check(b, strictjson.Checks{Shape: s, MaxDepth: maxKeyDepth, Plain: true}) == nil
}
