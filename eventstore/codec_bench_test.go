package eventstore

import "testing"

func BenchmarkEncodeObservation(b *testing.B) {
	r := validRecords()[KindObservation]
	for b.Loop() {
		if _, err := Encode(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeKind decodes one record of each kind; journal.header is
// the largest and most nested.
func BenchmarkDecodeKind(b *testing.B) {
	records := validRecords()
	for _, k := range Kinds() {
		r, ok := records[k]
		if !ok {
			continue
		}
		data, err := Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(k), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
