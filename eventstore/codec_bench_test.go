package eventstore

import "testing"

func BenchmarkDecodeObservation(b *testing.B) {
	data, err := Encode(validRecords()[KindObservation])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeHeader decodes the largest and most nested record kind.
func BenchmarkDecodeHeader(b *testing.B) {
	data, err := Encode(validRecords()[KindHeader])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeObservation(b *testing.B) {
	r := validRecords()[KindObservation]
	for b.Loop() {
		if _, err := Encode(r); err != nil {
			b.Fatal(err)
		}
	}
}
