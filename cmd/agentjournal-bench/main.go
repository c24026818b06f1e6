package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentjournal/agentjournal/policy/fleetbench"
)

func main() {
	// A policy subscriber of the fleet suite, which runs it from this
	// binary when each daemon is to have a CPU budget of its own.
	if len(os.Args) > 1 && os.Args[1] == fleetbench.MemberCommand {
		os.Exit(fleetbench.MemberMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main{Stdout: os.Stdout, Stderr: os.Stderr}.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
