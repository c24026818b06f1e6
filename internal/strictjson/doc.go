// Package strictjson checks JSON text for what a decoder lets pass
// silently, in one walk over its bytes that decodes nothing:
//
//   - a key twice in one object, which encoding/json answers with the last
//     value (Checks.Duplicates, DuplicateKeyError);
//   - a key that names no field of the destination type exactly, or an
//     object or array where the type takes none (Checks.Shape, ErrShape);
//   - nesting deeper than a bound (Checks.MaxDepth, ErrTooDeep);
//   - strings that decoders read differently from one another: bytes that
//     are not UTF-8, a \u escape of a high surrogate not followed by
//     another \u escape (Checks.Plain, ErrNotPlain).
//
// It reads one value with nothing but white space after it, as JSON spells
// it; anything else is ErrSyntax, and the first problem met in the text
// is the one returned.
//
// The API refuses request bodies with a key twice; the event store checks
// that a record is spelled exactly as its type's fields before it takes
// its fast decoder, which would otherwise skip unknown keys. Neither the
// decoding nor the wording of errors for clients is done here: the walk
// only tells what it found and where.
package strictjson
