package execution

import "testing"

// TestChoice: an answer names a choice by its number as shown or by its
// text in any case; anything else is kept as it was given.
func TestChoice(t *testing.T) {
	r := InputRequest{Choices: []string{"allow", "allow-always", "deny"}}
	tests := []struct{ name, answer, want string }{
		{"number", "2", "allow-always"},
		{"number with spaces", " 3 ", "deny"},
		{"text in another case", "Allow-Always", "allow-always"},
		{"number out of range", "4", "4"},
		{"zero", "0", "0"},
		{"words", "not now, run the tests first", "not now, run the tests first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Choice(tt.answer); got != tt.want {
				t.Errorf("Choice(%q): got %q, want %q", tt.answer, got, tt.want)
			}
		})
	}
	if got := (InputRequest{}).Choice("1"); got != "1" {
		t.Errorf("a request without choices: got %q, want the answer as given", got)
	}
}
