package oneof

import (
	"slices"
	"strings"
)

// Join lists the accepted values as "a, b, c", in their order.
func Join[T ~string](accepted []T) string {
	return strings.Join(Strings(accepted), ", ")
}

// Strings returns the accepted values as plain strings, in their order,
// for an error that carries them as a list.
func Strings[T ~string](accepted []T) []string {
	out := make([]string, len(accepted))
	for i, v := range accepted {
		out[i] = string(v)
	}
	return out
}

// Parse returns s as a value of the enumeration when accepted holds it,
// and false otherwise. The caller says what was refused in its own words.
func Parse[T ~string](s string, accepted []T) (T, bool) {
	if v := T(s); slices.Contains(accepted, v) {
		return v, true
	}
	return "", false
}
