package fleetbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/policy"
)

// MemberCommand is the first argument that makes a program run one policy
// subscriber for a round with Config.DaemonCPU set, rather than itself. A
// program that runs this package's rounds hands its arguments to
// MemberMain when the first is MemberCommand; a process of its own is the
// only way to hold one daemon to its share of the CPU.
const MemberCommand = "fleetbench-member"

// memberEnv carries a member process's memberConfig, as JSON.
const memberEnv = "AGENTJOURNAL_FLEETBENCH_MEMBER"

// memberConfig is what a member process needs to decide: its node, and
// its place in the group.
type memberConfig struct {
	URL        string `json:"url"`
	Secret     string `json:"secret"`
	Stream     string `json:"stream"`
	Partitions int    `json:"partitions"`
	Member     string `json:"member"`
}

// A member process and the round that started it speak in lines. The
// member writes "owns P1 P2 …" when its partitions change, "decided ID"
// for each decision it carried out, "held" once its handlers are held back
// and "restart ERROR" when its subscriber stopped on an error and starts
// again. The round writes "hold" and "release"; the end of its input stops
// the member.
const (
	lineOwns     = "owns"
	lineDecided  = "decided"
	lineHeld     = "held"
	lineRestart  = "restart"
	lineHold     = "hold"
	lineRelease  = "release"
	memberFailed = 1
)

// MemberMain runs one policy subscriber as a member process and returns
// its exit code. Its configuration comes from the round that started it,
// through the environment; errors go to stderr.
func MemberMain() int {
	if err := runMember(); err != nil {
		fmt.Fprintf(os.Stderr, "fleetbench member: %v\n", err)
		return memberFailed
	}
	return 0
}

func runMember() (err error) {
	var cfg memberConfig
	if err := json.Unmarshal([]byte(os.Getenv(memberEnv)), &cfg); err != nil {
		return fmt.Errorf("read %s: %w (this command is started by the fleet benchmark, not by hand)", memberEnv, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := bus.Open(ctx, bus.Config{URL: cfg.URL, Secret: cfg.Secret, StreamName: cfg.Stream})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	store, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: cfg.Stream})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	out := &lineWriter{w: os.Stdout}
	gate := newGate()
	sub := policy.NewSubscriber(&gatedLog{JetStreamStore: store, gate: gate}, policy.SubscriberConfig{
		Partitions: cfg.Partitions,
		Member:     cfg.Member,
		Owns: func(parts []int) {
			words := []string{lineOwns}
			for _, p := range parts {
				words = append(words, strconv.Itoa(p))
			}
			out.line(strings.Join(words, " "))
		},
		Decided: func(d eventstore.Decided) { out.line(lineDecided + " " + d.Decision.ObservationID) },
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	go func() {
		// The round's end, or its own, closes this input.
		defer stop()
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case lineHold:
				gate.shut()
				out.line(lineHeld)
			case lineRelease:
				gate.open()
			}
		}
	}()
	keepRunning(ctx, sub.Run, func(err error) {
		// One line each: the error's own line breaks would split it.
		out.line(lineRestart + " " + strings.ReplaceAll(err.Error(), "\n", "; "))
	})
	return nil
}

// lineWriter writes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A round that has gone away has no use for the line.
	_, _ = io.WriteString(l.w, s+"\n")
}

// memberStopTimeout bounds how long a member process has to stop once its
// input ends, before it is killed.
const memberStopTimeout = 15 * time.Second

// memberProc is a member process seen from the round.
type memberProc struct {
	name   string
	cmd    *exec.Cmd
	in     *lineWriter
	stdin  io.Closer
	limit  *cpuLimit
	stderr *tail
	held   chan struct{} // one value per "held" line
	read   chan struct{} // closed once its output is read to the end
	exited chan struct{} // closed once it exited
	err    error         // how it exited, set before exited is closed
}

// startMember starts member process i on node i, limited to
// Config.DaemonCPU CPUs, and feeds what it says to g.
func (r *runner) startMember(w *workload, i int, partitions int, g *group) (_ *memberProc, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to start a member: %w", err)
	}
	node := w.cl.buses[i]
	cfg, err := json.Marshal(memberConfig{URL: node.ClientURL(), Secret: w.cl.secret, Stream: node.StreamName(),
		Partitions: partitions, Member: node.ServerName()})
	if err != nil {
		return nil, err
	}
	m := &memberProc{name: node.ServerName(), stderr: &tail{max: 4 << 10}, held: make(chan struct{}, 1),
		read: make(chan struct{}), exited: make(chan struct{})}
	m.limit, err = newCPULimit(fmt.Sprintf("agentjournal-fleetbench-%d-%d", os.Getpid(), i), r.cfg.DaemonCPU)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.limit.remove())
		}
	}()
	m.cmd = exec.Command(exe, MemberCommand)
	// As many Go threads as the CPUs it may use: more would only be
	// throttled.
	m.cmd.Env = append(os.Environ(), memberEnv+"="+string(cfg),
		"GOMAXPROCS="+strconv.Itoa(max(1, int(math.Ceil(r.cfg.DaemonCPU)))))
	m.cmd.Stderr = m.stderr
	stdin, err := m.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start member %s: %w", m.name, err)
	}
	m.stdin, m.in = stdin, &lineWriter{w: stdin}
	// It has done nothing yet worth measuring before it is limited: it
	// has yet to connect.
	if err := m.limit.add(m.cmd.Process.Pid); err != nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
		return nil, err
	}
	go m.listen(stdout, g)
	go func() {
		<-m.read
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

// listen hands g what the member says, until its output ends.
func (m *memberProc) listen(stdout io.Reader, g *group) {
	defer close(m.read)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case lineDecided:
			g.heard(&eventstore.Decision{ObservationID: rest})
		case lineOwns:
			var parts []int
			for _, f := range strings.Fields(rest) {
				if p, err := strconv.Atoi(f); err == nil {
					parts = append(parts, p)
				}
			}
			g.owned(m.name, parts)
		case lineHeld:
			m.held <- struct{}{}
		case lineRestart:
			g.failed(m.name, errors.New(rest))
		}
	}
	// Drain what is left so that the member never blocks writing.
	io.Copy(io.Discard, stdout)
}

// hold holds the member's handlers back, returning once it said so.
func (m *memberProc) hold(ctx context.Context) error {
	m.in.line(lineHold)
	select {
	case <-m.held:
		return nil
	case <-m.exited:
		return fmt.Errorf("member %s exited (%v): %s", m.name, m.err, m.stderr)
	case <-ctx.Done():
		return fmt.Errorf("member %s did not hold back: %w", m.name, ctx.Err())
	}
}

func (m *memberProc) release() { m.in.line(lineRelease) }

// stop ends the member's input, waits for it to exit, killing it after
// memberStopTimeout, and removes its control group.
func (m *memberProc) stop() error {
	m.stdin.Close()
	t := time.NewTimer(memberStopTimeout)
	defer t.Stop()
	var err error
	select {
	case <-m.exited:
		if m.err != nil {
			err = fmt.Errorf("member %s: %w: %s", m.name, m.err, m.stderr)
		}
	case <-t.C:
		m.cmd.Process.Kill()
		<-m.exited
		err = fmt.Errorf("member %s did not stop within %s: %s", m.name, memberStopTimeout, m.stderr)
	}
	return errors.Join(err, m.limit.remove())
}

// tail keeps the last max bytes written to it, for an error message.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.b) == 0 {
		return "(nothing on stderr)"
	}
	return strings.TrimSpace(string(t.b))
}

// CanLimitCPU says why Config.DaemonCPU cannot be used on this machine, or
// nil when it can: it makes a control group and removes it.
func CanLimitCPU() error {
	l, err := newCPULimit(fmt.Sprintf("agentjournal-fleetbench-%d-probe", os.Getpid()), 1)
	if err != nil {
		return err
	}
	return l.remove()
}
