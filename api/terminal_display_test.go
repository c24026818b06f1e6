package api

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/terminal"
)

const testNonce = "3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e"

func TestDisplayRecent(t *testing.T) {
	t.Run("a tail that may begin a marker waits", func(t *testing.T) {
		if got := displayRecent("ready\r\n@@agent"); got != "ready\r\n" {
			t.Errorf("got %q, want the line before the tail", got)
		}
	})
	t.Run("a full ring loses its first line", func(t *testing.T) {
		// The ring overwrote the start of a marker: its end is first.
		head := testNonce + ` {"type":"status","payload":{"summary":"s"}}` + "\r\n"
		body := strings.Repeat("x", 99) + "\r\n"
		recent := head + strings.Repeat(body, (terminal.DefaultScrollbackBytes-len(head))/len(body))
		recent += strings.Repeat("y", terminal.DefaultScrollbackBytes-len(recent))
		got := displayRecent(recent)
		if strings.Contains(got, testNonce) {
			t.Fatalf("the shown output holds the nonce: %q…", got[:80])
		}
		if want := recent[len(head):]; got != want {
			t.Errorf("got %d bytes, want the %d after the first line", len(got), len(want))
		}
	})
	t.Run("a ring not full keeps its first line", func(t *testing.T) {
		if got := displayRecent("first\r\nsecond"); got != "first\r\nsecond" {
			t.Errorf("got %q", got)
		}
	})
}

func TestWriteDisplayRecording(t *testing.T) {
	mark := "@@agentjournal " + testNonce + ` {"type":"progress","payload":{"summary":"Compiling"}}`
	rec := `{"version":2,"width":80,"height":24}` + "\n" +
		fmt.Sprintf("[0.100000, \"o\", %q]\n", "start\r\n"+mark[:20]) +
		fmt.Sprintf("[0.200000, \"o\", %q]\n", mark[20:]+"\r\n<b>done</b> & more\r\nuser@") +
		"[0.300000, \"i\", \"y\\r\"]\n" +
		"[0.400000, \"r\", \"100x30\"]\n" +
		"[0.500000, \"m\", \"exit 0\"]\n" +
		`[0.6000` // a line the runtime is still writing
	var out bytes.Buffer
	if err := writeDisplayRecording(&out, strings.NewReader(rec)); err != nil {
		t.Fatal(err)
	}
	header, events, err := terminal.ReadRecording(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("the answer is no asciicast v2 recording: %v\n%s", err, out.Bytes())
	}
	if header.Width != 80 || header.Height != 24 {
		t.Errorf("header %+v, want the recording's", header)
	}
	var got []string
	for _, ev := range events {
		got = append(got, fmt.Sprintf("%.1f %s %q", ev.Time, ev.Code, ev.Data))
	}
	want := []string{
		`0.1 o "start\r\n"`,
		`0.2 o "<b>done</b> & more\r\nuser"`,
		`0.3 i "y\r"`,
		`0.4 r "100x30"`,
		`0.5 m "exit 0"`,
		`0.5 o "@"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bytes.Contains(out.Bytes(), []byte(testNonce)) || bytes.Contains(out.Bytes(), []byte("@@agentjournal")) {
		t.Errorf("the answer holds the marker: %s", out.Bytes())
	}
}
