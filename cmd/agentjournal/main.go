package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/datadir"
	"github.com/agentjournal/agentjournal/supervisor"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// dataEnv names the environment variable that sets the default data directory.
const dataEnv = datadir.Env

func main() {
	// An agent's supervisor, which the daemon starts from its own binary:
	// no command of the CLI, so never in its help.
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Main is the program: it reads the global flags, picks the command and turns
// its outcome into output and an exit code. Its fields are the process's
// surroundings, so tests run the same code on buffers.
type Main struct {
	// Stdin is read by the commands that take input (mcp); os.Stdin when
	// nil.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
	// HomeDir returns the user's home directory; os.UserHomeDir when nil.
	HomeDir func() (string, error)
}

// Run runs the command line args (without the program name) and returns the
// exit code: 0 on success, 1 on failure, 2 on bad usage.
func (m Main) Run(ctx context.Context, args []string) int {
	out := bufio.NewWriter(m.Stdout)
	env := &Env{Stdin: m.stdin(), Stdout: out, Stderr: m.Stderr, Getenv: m.getenv}
	env.stdoutFile, _ = m.Stdout.(*os.File)
	err := m.run(ctx, env, args)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write output: %w", ferr)
	}
	return m.report(ctx, err)
}

func (m Main) run(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("agentjournal", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sync := syncFlag(bus.SyncAlways)
	fs.StringVar(&env.DataDir, "data", "", "`DIR` holding the journal store and its lock")
	fs.Var(&sync, "sync", "fsync `MODE`: always (every write is on disk before it is acknowledged; writes acknowledged together share an fsync) or interval (faster; a power loss can lose the last interval)")
	fs.StringVar(&env.NATSURL, "nats-url", "", "use the NATS server at `URL` (another agentjournal's, or a cluster) instead of the embedded one")
	fs.StringVar(&env.NATSSecretFile, "nats-secret-file", "", "the NATS secret `PATH` (default DATA/nats-secret): a daemon whose NATS listens creates it 0600 and requires it; with --nats-url, give the file of the agentjournal that serves it")
	version := fs.Bool("version", false, "print the version, the source revision and the versions of the modules that store and serve the journal, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpRequest{text: mainUsage(fs)}
		}
		return &usageError{err: flagError(fs, err), help: mainUsage(fs)}
	}
	if *version {
		return printVersion(env.Stdout)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "data" {
			env.DataDirFromFlag = true
		}
	})
	env.Sync = bus.SyncMode(sync)

	args = fs.Args()
	if len(args) == 0 {
		return &usageError{err: errors.New("no command given"), help: mainUsage(fs)}
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		return helpFor(fs, rest)
	}
	cmd := newCommand(name, env)
	if cmd == nil {
		return &usageError{
			err:  fmt.Errorf("unknown command %q (want one of: %s)", name, strings.Join(commandNames, ", ")),
			help: mainUsage(fs),
		}
	}
	if env.DataDir == "" {
		if env.DataDirFromFlag {
			return &usageError{err: errors.New("--data is empty (want a directory)"), help: mainUsage(fs)}
		}
		dir, err := defaultDataDir(m.getenv, m.homeDir)
		if err != nil {
			return err
		}
		env.DataDir = dir
	}
	return cmd.Run(ctx, rest)
}

// report writes err, if any, to stderr and returns the exit code.
func (m Main) report(ctx context.Context, err error) int {
	var help *helpRequest
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &help):
		fmt.Fprint(m.Stdout, help.text)
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(m.Stderr, "agentjournal: %v\n\n%s", usage.err, usage.help)
		return exitUsage
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintln(m.Stderr, "agentjournal: interrupted")
		return exitError
	}
	// An error may quote ids or text an agent chose.
	fmt.Fprintf(m.Stderr, "agentjournal: %s\n", termSafe(err.Error()))
	return exitError
}

func (m Main) stdin() io.Reader {
	if m.Stdin == nil {
		return os.Stdin
	}
	return m.Stdin
}

func (m Main) getenv(key string) string {
	if m.Getenv == nil {
		return os.Getenv(key)
	}
	return m.Getenv(key)
}

func (m Main) homeDir() (string, error) {
	if m.HomeDir == nil {
		return os.UserHomeDir()
	}
	return m.HomeDir()
}

// defaultDataDir is $AGENTJOURNAL_DATA, else $XDG_DATA_HOME/agentjournal,
// else ~/.local/share/agentjournal.
func defaultDataDir(getenv func(string) string, home func() (string, error)) (string, error) {
	return datadir.Default(getenv, home)
}

// syncFlag is the --sync value: always or interval.
type syncFlag bus.SyncMode

func (s *syncFlag) String() string { return string(*s) }

func (s *syncFlag) Set(v string) error {
	switch m := bus.SyncMode(v); m {
	case bus.SyncAlways, bus.SyncInterval:
		*s = syncFlag(m)
		return nil
	}
	return fmt.Errorf("want %s or %s", bus.SyncAlways, bus.SyncInterval)
}

// Env is what every command gets from Main: where its input comes from,
// where its output goes and which data directory it works on.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment.
	Getenv func(string) string
	// DataDir is the data directory, already resolved.
	DataDir string
	// DataDirFromFlag is set when --data named DataDir, so hints printed for
	// the user repeat it.
	DataDirFromFlag bool
	Sync            bus.SyncMode
	// NATSURL, when set, joins an existing NATS instead of embedding one.
	NATSURL string
	// NATSSecretFile is where the NATS secret is kept; DATA/nats-secret
	// when empty.
	NATSSecretFile string
	// stdoutFile is the file under Stdout, when it is one: whether it is
	// a terminal decides colours.
	stdoutFile *os.File
}

// natsSecret returns the secret a NATS connection or listener uses. create
// makes it when missing (a daemon whose NATS listens); otherwise a missing
// default file means none (a server without authentication), while a
// missing file the user named is an error.
func (e *Env) natsSecret(create bool) (string, error) {
	path := e.NATSSecretFile
	if path == "" {
		path = e.layout().NATSSecret()
	}
	if create {
		return bus.LoadOrCreateSecret(path)
	}
	secret, err := bus.LoadSecret(path)
	if errors.Is(err, fs.ErrNotExist) && e.NATSSecretFile == "" {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("--nats-secret-file: %w", err)
	}
	return secret, nil
}

// layout is the data directory's layout.
func (e *Env) layout() daemon.Layout { return daemon.Layout{Dir: e.DataDir} }

// busConfig is the log the global flags name: the NATS embedded on the
// data directory, or the one --nats-url names, logged in to with its
// secret.
func (e *Env) busConfig() (bus.Config, error) {
	cfg := bus.DefaultConfig()
	cfg.DataDir = e.layout().Bus()
	cfg.Sync = e.Sync
	cfg.URL = e.NATSURL
	if cfg.URL != "" {
		secret, err := e.natsSecret(false)
		if err != nil {
			return cfg, err
		}
		cfg.Secret = secret
	}
	if cfg.Sync == bus.SyncInterval && cfg.URL == "" {
		fmt.Fprintf(e.Stderr, "agentjournal: warning: --sync=interval: a power loss can lose records acknowledged in the last %s\n", cfg.SyncInterval)
	}
	return cfg, nil
}

// withStore opens the embedded bus and the journal store on the data
// directory, runs fn and closes both.
func (e *Env) withStore(ctx context.Context, fn func(eventstore.Store) error) (err error) {
	cfg, err := e.busConfig()
	if err != nil {
		return err
	}
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		var locked *bus.LockedError
		if errors.As(err, &locked) {
			return e.lockedByDaemon(locked)
		}
		return fmt.Errorf("open data directory %s: %w", e.DataDir, err)
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	return fn(s)
}

// hintPrefix is the command prefix to repeat in hints: "agentjournal", plus
// --data when the user named the data directory.
func (e *Env) hintPrefix() string {
	if !e.DataDirFromFlag {
		return "agentjournal"
	}
	return "agentjournal --data " + shellQuote(e.DataDir)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lockedByDaemon words a data directory lock held by the daemon that
// serves it: what to use instead, rather than the bare lock error. The
// commands that read or write journals go through the daemon
// (withJournals); this reaches the ones that need the directory itself.
func (e *Env) lockedByDaemon(locked *bus.LockedError) error {
	info, err := e.layout().ReadInfo()
	if err != nil || info.PID != locked.PID || !processAlive(info.PID) {
		return locked
	}
	return fmt.Errorf("data directory %s is served by the agentjournal daemon at %s (process %d), which holds it locked; "+
		"this command opens the data directory itself and cannot run beside the daemon: launch runs an agent in the daemon as run does "+
		"(the commands that read or write journals, ls, show and timeline work through the daemon), or stop the daemon first; "+
		"a daemon started with --nats-listen ADDR lets it run with --nats-url nats://ADDR --nats-secret-file %s --data OTHER_DIR",
		e.DataDir, info.URL, info.PID, shellQuote(e.layout().NATSSecret()))
}
