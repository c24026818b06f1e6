package runtime

import (
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// The one ending value says what an exit means whatever order its causes
// and stages came in: a later, weaker cause never hides a stronger one.
func TestEndingTellsTheInterruption(t *testing.T) {
	signalExit := exit{desc: "signal: terminated"}
	tests := []struct {
		name   string
		steps  func(e *ending)
		exit   exit
		want   eventstore.InterruptionReason
		wantOK bool
	}{
		{"agent exits by itself", func(*ending) {}, exit{success: true, desc: "exit status 0"}, "", false},
		{"signal nobody here sent", func(*ending) {}, signalExit, eventstore.InterruptCrash, true},
		{"operator stop", func(e *ending) { e.reach(inputClosed); e.reach(signalled) }, signalExit, eventstore.InterruptCanceled, true},
		{"operator stop then shutdown", func(e *ending) { e.reach(signalled); e.by(byShutdown, 0) }, signalExit, eventstore.InterruptShutdown, true},
		{"time limit then shutdown", func(e *ending) {
			e.by(byTimeLimit, time.Minute)
			e.reach(signalled)
			e.by(byShutdown, 0)
		}, signalExit, eventstore.InterruptTimeout, true},
		{"time limit, clean exit after input closed", func(e *ending) { e.by(byTimeLimit, time.Minute); e.reach(inputClosed) },
			exit{success: true, desc: "exit status 0"}, eventstore.InterruptTimeout, true},
		{"stages never go back", func(e *ending) { e.reach(killed); e.reach(inputClosed) }, signalExit, eventstore.InterruptCanceled, true},
		{"lost supervisor", func(e *ending) { e.reach(signalled) }, exit{lost: true, desc: "supervisor gone"}, eventstore.InterruptSystemRestart, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e ending
			tt.steps(&e)
			got, ok := interruptionOf(tt.exit, e)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("interruptionOf = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	var e ending
	e.by(byTimeLimit, time.Minute)
	if _, ok := e.timedOut(); ok {
		t.Error("timedOut before any stop stage: want false (the limit fired, nothing was stopped yet)")
	}
	if !e.started() {
		t.Error("started after the time limit fired: want true, so a second limit does not stop it again")
	}
	e.by(byLeaving, 0)
	if e.cause != byLeaving {
		t.Errorf("cause after leaving = %d, want byLeaving", e.cause)
	}
}
