package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/workspace"
)

// ErrBadCommand is an invocation the daemon cannot carry out for its
// input: a file that is not there, too big or outside the work tree.
var ErrBadCommand = errors.New("execution: command refused")

// Limits of what commands read and record.
const (
	// MaxContextFile is the largest file /read or /attach sends.
	MaxContextFile = 256 << 10
	// maxDiffFiles and maxImpactHits bound what a semantic operation's
	// observation lists.
	maxDiffFiles  = 100
	maxImpactHits = 100
	// commandTimeout bounds the git commands of a semantic operation.
	commandTimeout = 30 * time.Second
	// EffectVerificationRequested is the owner effect /verify records.
	EffectVerificationRequested = "verification.requested"
	// DiagnosticCommandParseFailed is the diagnostic code of a parse
	// failure the operator saw.
	DiagnosticCommandParseFailed = "command-parse-failed"
)

// AdvertisedDescriptors turns the slash commands an agent advertised into
// adapter-scoped descriptors of adapterID. Names no command could have are
// left out; so is a second one of a name.
func AdvertisedDescriptors(adapterID string, cmds []agent.Command) []eventstore.MessageDescriptor {
	out := []eventstore.MessageDescriptor{}
	seen := map[string]bool{}
	for _, c := range cmds {
		name := strings.TrimPrefix(strings.TrimSpace(c.Name), "/")
		if !advertisedName.MatchString(name) || seen[name] || len(out) >= maxAdvertised {
			continue
		}
		seen[name] = true
		desc := c.Description
		if desc == "" {
			desc = "/" + name + ", advertised by " + adapterID
		}
		if c.Hint != "" {
			desc += " (input: " + c.Hint + ")"
		}
		if len(desc) > 300 {
			desc = strings.ToValidUTF8(desc[:300], "") + "…"
		}
		out = append(out, eventstore.MessageDescriptor{Type: name, Label: "/" + name, Description: desc,
			Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityAdapterScoped, AdapterID: adapterID})
	}
	return out
}

// recordAdvertised records the commands an agent advertised. The id is
// the list's digest, so the same list read again (a recovery re-reading
// output) is recorded once.
func (rt *Runtime) recordAdvertised(ctx context.Context, p *process, cmds []agent.Command) {
	msgs := AdvertisedDescriptors(p.adapter.ID(), cmds)
	b, _ := json.Marshal(msgs)
	sum := sha256.Sum256(b)
	rt.record(ctx, p, advertisedObservation("adv-"+hex.EncodeToString(sum[:12]), p.adapter.ID(), msgs))
}

var advertisedName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)

const maxAdvertised = 200

// advertisedObservation records what an agent advertised.
func advertisedObservation(id, adapterID string, msgs []eventstore.MessageDescriptor) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceAuthoritative,
		Payload: map[string]any{execution.AdvertisedCommandsKey: execution.Advertised{AdapterID: adapterID, Messages: msgs}}}
}

// InvokeResult is what carrying out an invocation appended or did.
type InvokeResult struct {
	// Sequence is the journal sequence of the record appended; 0 for
	// terminal input, which the journal never sees.
	Sequence uint64 `json:"sequence,omitempty"`
	// RecordType is the kind of that record.
	RecordType string `json:"recordType,omitempty"`
	// ID is the checkpoint, message, observation or effect id.
	ID string `json:"id,omitempty"`
	// Message is the acknowledgement of a message invocation.
	Message *MessageAck `json:"message,omitempty"`
	// Summary says what was done in a line.
	Summary string `json:"summary"`
}

// invocationKey is what an invocation's key may be: it becomes part of
// record ids, so plain characters only.
var invocationKey = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)

// Invoke carries out a resolved invocation, recording it the way its
// target is: a checkpoint, a message, an observation or an owner effect.
// Terminal input goes to the terminal lane and its recording only. A key
// names the invocation so that a retry with the same key records nothing
// new (terminal input excepted); "" makes up a fresh one.
func (rt *Runtime) Invoke(ctx context.Context, id string, inv *commands.Invocation, key string) (InvokeResult, error) {
	if key != "" && !invocationKey.MatchString(key) {
		return InvokeResult{}, fmt.Errorf("%w: key %q is not accepted (want 1 to 100 letters, digits, '.', '_', ':' or '-')", ErrBadCommand, key)
	}
	if key == "" {
		key = randomHex(6)
	}
	ref, _, _, err := rt.resolve(ctx, id)
	if err != nil {
		return InvokeResult{}, err
	}
	switch inv.Operation {
	case commands.OpCheckpoint:
		c, err := rt.Checkpoint(ctx, CheckpointRequest{Execution: id, ID: "cp-" + key, Source: eventstore.SourceOperator, Title: inv.Title})
		if err != nil {
			return InvokeResult{}, err
		}
		return InvokeResult{Sequence: c.Sequence, RecordType: string(eventstore.KindCheckpoint), ID: c.CheckpointID,
			Summary: "checkpoint " + c.CheckpointID}, nil
	case commands.OpBlocked:
		o := &eventstore.Observation{ObservationID: "cmd-blocked-" + key, Source: eventstore.ObservedDaemon,
			Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(&eventstore.BlockedSignal{Reason: inv.Reason}),
			Payload: map[string]any{"command": "/blocked", "from": string(eventstore.SourceOperator)}}
		return rt.recordCommandObservation(ctx, id, o, "blocked: "+inv.Reason)
	case commands.OpVerify:
		st, err := rt.replay(ctx, ref)
		if err != nil {
			return InvokeResult{}, err
		}
		e := &eventstore.OwnerEffect{EffectID: "eff-verify-" + key, OwnerEntity: st.OwnerEntity, EffectType: EffectVerificationRequested,
			Payload: map[string]any{"command": "/verify", "source": string(eventstore.SourceOperator), "lifecycle": string(st.Lifecycle)}}
		got, err := rt.cfg.Store.Append(ctx, ref, e)
		if err != nil {
			return InvokeResult{}, fmt.Errorf("verify %s: %w", id, err)
		}
		return InvokeResult{Sequence: got.Record.RecordBase().Sequence, RecordType: string(eventstore.KindOwnerEffect), ID: e.EffectID,
			Summary: fmt.Sprintf("verification requested of %s %s", st.OwnerEntity, st.OwnerID)}, nil
	case commands.OpContext:
		return rt.sendContext(ctx, id, ref, inv, "msg-"+key)
	case commands.OpMessage:
		ack, err := rt.SendMessage(ctx, id, SendMessageInput{MessageID: "msg-" + key, Type: inv.MessageType, Source: eventstore.SourceOperator, Payload: inv.Payload})
		if err != nil {
			return InvokeResult{}, err
		}
		return InvokeResult{Sequence: ack.Sequence, RecordType: string(eventstore.KindMessage), ID: ack.MessageID, Message: &ack,
			Summary: fmt.Sprintf("%s message %s: %s", inv.MessageType, ack.MessageID, ack.Delivery)}, nil
	case commands.OpSummarizeDiff:
		return rt.summarizeDiff(ctx, id, ref, "cmd-diff-"+key)
	case commands.OpImpact:
		return rt.impact(ctx, id, ref, inv.Symbol, "cmd-impact-"+key)
	case commands.OpTerminalInput:
		if err := rt.TerminalInput(id, []byte(inv.Input)); err != nil {
			return InvokeResult{}, err
		}
		return InvokeResult{Summary: fmt.Sprintf("%d bytes written to the terminal lane (transport evidence, not journaled)", len(inv.Input))}, nil
	}
	return InvokeResult{}, fmt.Errorf("%w: unknown operation %q", ErrBadCommand, inv.Operation)
}

// RecordCommandFailure records a parse failure the operator saw as a
// diagnostic observation.
func (rt *Runtime) RecordCommandFailure(ctx context.Context, id string, pe *commands.ParseError) (InvokeResult, error) {
	o := &eventstore.Observation{ObservationID: "cmd-failed-" + randomHex(6), Source: eventstore.ObservedDaemon, Confidence: eventstore.ConfidenceDiagnostic,
		Signal:  eventstore.NewSignal(&eventstore.DiagnosticSignal{Code: DiagnosticCommandParseFailed, Message: clipReason(pe.Error())}),
		Payload: map[string]any{"text": clipReason(pe.Text), "expected": pe.Expected}}
	return rt.recordCommandObservation(ctx, id, o, "parse failure recorded")
}

func (rt *Runtime) recordCommandObservation(ctx context.Context, id string, o *eventstore.Observation, summary string) (InvokeResult, error) {
	e, dup, err := rt.RecordObservation(ctx, id, o)
	if err != nil {
		return InvokeResult{}, err
	}
	if stored, ok := e.Record.(*eventstore.Observation); dup && ok && stored.RawText != "" {
		// A retry: the answer is what was recorded the first time.
		summary = stored.RawText
	}
	return InvokeResult{Sequence: e.Record.RecordBase().Sequence, RecordType: string(eventstore.KindObservation), ID: o.ObservationID, Summary: summary}, nil
}

// workTree is the execution's working directory, which the semantic
// operations and context messages read.
func (rt *Runtime) workTree(ctx context.Context, ref eventstore.Reference) (*execution.State, string, error) {
	st, err := rt.replay(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	if st.WorkingDirectory == "" {
		return nil, "", fmt.Errorf("%w: execution %s has no working directory", ErrBadCommand, ref.AgentExecutionID)
	}
	return st, st.WorkingDirectory, nil
}

// sendContext sends a work-tree file to the agent as a context message.
func (rt *Runtime) sendContext(ctx context.Context, id string, ref eventstore.Reference, inv *commands.Invocation, messageID string) (InvokeResult, error) {
	_, dir, err := rt.workTree(ctx, ref)
	if err != nil {
		return InvokeResult{}, err
	}
	data, err := readConfined(dir, inv.Path)
	if err != nil {
		return InvokeResult{}, err
	}
	sum := sha256.Sum256(data)
	text := fmt.Sprintf("Context from the operator (/%s %s):\n\n```\n%s\n```", inv.Command, inv.Path, strings.TrimRight(string(data), "\n"))
	payload, err := json.Marshal(map[string]any{"text": text, "context": map[string]any{
		"command": inv.Command, "path": inv.Path, "bytes": len(data), "sha256": hex.EncodeToString(sum[:])}})
	if err != nil {
		return InvokeResult{}, err
	}
	ack, err := rt.SendMessage(ctx, id, SendMessageInput{MessageID: messageID, Type: inv.MessageType, Source: eventstore.SourceOperator, Payload: payload})
	if err != nil {
		return InvokeResult{}, err
	}
	return InvokeResult{Sequence: ack.Sequence, RecordType: string(eventstore.KindMessage), ID: ack.MessageID, Message: &ack,
		Summary: fmt.Sprintf("%s (%d bytes) sent as context: %s", inv.Path, len(data), ack.Delivery)}, nil
}

// readConfined reads a regular text file at rel under dir, refusing one
// whose real path (links followed) leaves dir, and one too big.
func readConfined(dir, rel string) ([]byte, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: the working directory %s: %v", ErrBadCommand, dir, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: no such file in the working directory", ErrBadCommand, rel)
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%w: %s leads outside the working directory (want a file inside it)", ErrBadCommand, rel)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCommand, rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCommand, rel, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file (want a file, not a directory or device)", ErrBadCommand, rel)
	case fi.Size() > MaxContextFile:
		return nil, fmt.Errorf("%w: %s is %d bytes (want at most %d)", ErrBadCommand, rel, fi.Size(), MaxContextFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxContextFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCommand, rel, err)
	}
	if len(data) > MaxContextFile {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrBadCommand, rel, MaxContextFile)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s is binary (want a text file)", ErrBadCommand, rel)
	}
	return data, nil
}

// gitIn runs git in dir.
func gitIn(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.quotepath=off"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// diffFile is one file of /summarize-diff.
type diffFile struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
	New     bool   `json:"new,omitempty"`
}

// summarizeDiff records the work tree's changes since the execution
// started: against its first workspace snapshot when it has one, else
// against HEAD.
func (rt *Runtime) summarizeDiff(ctx context.Context, id string, ref eventstore.Reference, obsID string) (InvokeResult, error) {
	_, dir, err := rt.workTree(ctx, ref)
	if err != nil {
		return InvokeResult{}, err
	}
	base, baseName := "HEAD", "HEAD"
	if refs, err := workspace.List(ctx, dir, id); err == nil && len(refs) > 0 {
		base, baseName = refs[0].Commit, refs[0].Name
	}
	out, err := gitIn(ctx, dir, "diff", "--numstat", "-z", base, "--")
	if err != nil {
		return InvokeResult{}, fmt.Errorf("%w: summarize the diff of %s: %v", ErrBadCommand, dir, err)
	}
	var files []diffFile
	added, deleted := 0, 0
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := strings.SplitN(fields[i], "\t", 3)
		if len(f) != 3 {
			continue
		}
		df := diffFile{Path: f[2]}
		if f[2] == "" && i+2 < len(fields) { // a rename: old and new paths follow
			df.Path = fields[i+2]
			i += 2
		}
		if f[0] == "-" {
			df.Binary = true
		} else {
			df.Added, _ = strconv.Atoi(f[0])
			df.Deleted, _ = strconv.Atoi(f[1])
		}
		added += df.Added
		deleted += df.Deleted
		files = append(files, df)
	}
	if untracked, err := gitIn(ctx, dir, "ls-files", "-z", "--others", "--exclude-standard"); err == nil {
		for _, p := range strings.Split(string(untracked), "\x00") {
			if p != "" {
				files = append(files, diffFile{Path: p, New: true})
			}
		}
	}
	summary := fmt.Sprintf("%d files changed since %s, +%d −%d", len(files), baseName, added, deleted)
	if len(files) == 0 {
		summary = "no changes since " + baseName
	}
	listed := files
	if len(listed) > maxDiffFiles {
		listed = listed[:maxDiffFiles]
	}
	o := &eventstore.Observation{ObservationID: obsID, Source: eventstore.ObservedDaemon, Confidence: eventstore.ConfidenceAuthoritative,
		RawText: summary, Payload: map[string]any{"operation": commands.OpSummarizeDiff, "command": "/summarize-diff", "base": baseName,
			"files": listed, "fileCount": len(files), "added": added, "deleted": deleted}}
	return rt.recordCommandObservation(ctx, id, o, summary)
}

// impactHit is one line of /impact.
type impactHit struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// impact records where a symbol is defined and used in the work tree.
func (rt *Runtime) impact(ctx context.Context, id string, ref eventstore.Reference, symbol, obsID string) (InvokeResult, error) {
	_, dir, err := rt.workTree(ctx, ref)
	if err != nil {
		return InvokeResult{}, err
	}
	// A qualified name (pkg.Name, Type.Method) is looked up by its last
	// part: that is what the source spells at the definition.
	name := symbol
	if i := strings.LastIndexAny(name, ".:"); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	out, err := gitIn(ctx, dir, "grep", "-n", "-I", "-w", "-F", "--untracked", "-e", name)
	// git grep exits 1, saying nothing, when nothing matches.
	if err != nil && (len(out) != 0 || !strings.Contains(err.Error(), "exit status 1")) {
		return InvokeResult{}, fmt.Errorf("%w: impact of %s in %s: %v", ErrBadCommand, symbol, dir, err)
	}
	def := regexp.MustCompile(`(^|\W)(func(\s*\([^)]*\))?|type|var|const|class|def|function|interface|struct|enum|trait|fn|let)\s+` + regexp.QuoteMeta(name) + `\b`)
	var defs, uses []impactHit
	files := map[string]bool{}
	total := 0
	for line := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		h := impactHit{Path: f[0], Line: n, Text: strings.TrimSpace(clipReason(f[2]))}
		total++
		files[f[0]] = true
		if def.MatchString(f[2]) {
			if len(defs) < maxImpactHits {
				defs = append(defs, h)
			}
		} else if len(uses) < maxImpactHits {
			uses = append(uses, h)
		}
	}
	summary := fmt.Sprintf("%s: %d definitions, %d uses in %d files", symbol, len(defs), total-len(defs), len(files))
	if total == 0 {
		summary = symbol + ": not found in the work tree"
	}
	o := &eventstore.Observation{ObservationID: obsID, Source: eventstore.ObservedDaemon, Confidence: eventstore.ConfidenceAuthoritative,
		RawText: summary, Payload: map[string]any{"operation": commands.OpImpact, "command": "/impact", "symbol": symbol,
			"definitions": defs, "uses": uses, "useCount": total - len(defs), "fileCount": len(files)}}
	return rt.recordCommandObservation(ctx, id, o, summary)
}
