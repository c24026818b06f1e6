package oneof_test

import (
	"slices"
	"testing"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

type color string

var colors = []color{"red", "green", "blue"}

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accepted []color
		want     string
	}{
		{"none", nil, ""},
		{"one", colors[:1], "red"},
		{"several, in order", colors, "red, green, blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := oneof.Join(tc.accepted); got != tc.want {
				t.Errorf("Join(%v) = %q, want %q", tc.accepted, got, tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	if got, want := oneof.Strings(colors), []string{"red", "green", "blue"}; !slices.Equal(got, want) {
		t.Errorf("Strings = %q, want %q", got, want)
	}
	if got := oneof.Strings([]color(nil)); got == nil || len(got) != 0 {
		t.Errorf("Strings(nil) = %#v, want an empty list", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want color
		ok   bool
	}{
		{"accepted", "green", "green", true},
		{"unknown", "purple", "", false},
		{"case matters", "Red", "", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := oneof.Parse(tc.in, colors)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Parse(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}
