package datadir

import (
	"errors"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	tests := []struct {
		name    string
		env     map[string]string
		home    func() (string, error)
		want    string
		wantErr string
	}{
		{name: "AGENTJOURNAL_DATA", env: map[string]string{Env: "/d", "XDG_DATA_HOME": "/x"}, home: home, want: "/d"},
		{name: "XDG_DATA_HOME", env: map[string]string{"XDG_DATA_HOME": "/x"}, home: home, want: "/x/agentjournal"},
		{name: "home", home: home, want: "/home/u/.local/share/agentjournal"},
		{name: "no home", home: noHome, wantErr: "set --data or $AGENTJOURNAL_DATA"},
	}
	for _, tt := range tests {
		got, err := Default(func(k string) string { return tt.env[k] }, tt.home)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
