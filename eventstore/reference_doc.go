package eventstore

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

// WriteReference writes the record and signal reference (docs/records.md)
// from the registries themselves, so the documentation cannot drift from
// what the decoder accepts. A test compares the file with this output.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Record and signal reference\n\n")
	b.WriteString("Generated from the record and signal registries (`go test ./eventstore -run TestReferenceDoc -update`).\n")
	b.WriteString("Every record is one JSON object; unknown fields, unknown kinds, missing required fields,\n")
	b.WriteString("values outside an enumeration and any `schemaVersion` other than 1 are rejected with an\n")
	b.WriteString("error naming the field and what is accepted.\n\n")

	b.WriteString("## Common fields\n\n| field | meaning |\n|---|---|\n")
	for _, f := range [][2]string{
		{"recordId", "deterministic id from (journalId, type, natural key); used as the log message id, so a repeated append is a no-op"},
		{"sequence", "1, 2, 3 … per journal, assigned by the store, gapless; 1 is always the `journal.header`"},
		{"type", "the record kind (below)"},
		{"schemaVersion", "always 1"},
		{"journalId", "the journal's id, derived from (ownerEntity, ownerId, agentExecutionId); carried on every record so a record read alone names its journal"},
		{"agentExecutionId", "the AgentExecution the journal belongs to"},
		{"ownerId", "the owning Entity's id"},
		{"scope", "the owning Entity kind: " + oneof.Join(OwnerEntities)},
		{"occurredAt", "RFC 3339 time, set by the store when the writer leaves it empty"},
	} {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f[0], f[1])
	}

	b.WriteString("\n## Record kinds\n\n| type | purpose | natural key | fields beyond the common ones |\n|---|---|---|---|\n")
	common := map[string]bool{}
	for _, f := range jsonFields(kindRegistry[KindHeader].typ.Field(0).Type) {
		common[f] = true
	}
	for _, k := range kindOrder {
		s := kindRegistry[k]
		var own []string
		for _, f := range s.fields {
			if !common[f] {
				own = append(own, "`"+f+"`")
			}
		}
		key := s.NaturalKey
		if key == "" {
			key = "chosen by the writer (`recordId` required)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k, s.Description, key, strings.Join(own, ", "))
	}
	b.WriteString("\nEach kind is registered with how a record of it reads for a person, and cannot be registered without:\n")
	b.WriteString("its summary (`eventstore.Summary`), the one line `journal cat` and `log` print after the sequence, time and\n")
	b.WriteString("type, its own id in brackets and the id it refers to in parentheses, free text quoted and clipped; and its\n")
	b.WriteString("timeline text (`eventstore.TimelineText`), the sentence the narrative tells of it, free text whole. An\n")
	b.WriteString("observation's are its signal's, from the signal registry below.\n")

	b.WriteString("\n## Enumerations\n\n| field | accepted values |\n|---|---|\n")
	for _, e := range [][2]string{
		{"message.accepted source", oneof.Join(messageSources)},
		{"message.delivery status", oneof.Join(deliveryStatuses)},
		{"message.delivery transport", oneof.Join(deliveryTransports)},
		{"observation.recorded source", oneof.Join(observationSources)},
		{"observation.recorded confidence", oneof.Join(confidences)},
		{"decision.recorded action", oneof.Join(decisionActions)},
		{"state.changed lifecycle", oneof.Join(Lifecycles) + " (never `awaiting-input`: an input request is running + awaiting-operator + currentInputRequestId)"},
		{"state.changed attention", oneof.Join(Attentions)},
		{"state.changed / activity.updated activity", oneof.Join(Activities)},
		{"state.changed currentInputRequestId", "absent (unchanged), a request id (set), `null` (cleared)"},
		{"activity.updated currentTarget.kind", oneof.Join(targetKinds)},
		{"activity.updated toolCall.status", oneof.Join(toolCallStatuses)},
		{"protocolDescriptor sessionShape", oneof.Join(SessionShapes) + " (absent for agents without a provider session)"},
		{"protocolDescriptor approvals.mode", oneof.Join(approvalModes)},
		{"plan signal items[].status", oneof.Join(PlanItemStatuses)},
		{"needs_input signal kind", oneof.Join(inputKinds) + " (absent means question)"},
		{"protocolDescriptor posture", oneof.Join(Postures)},
		{"message descriptor delivery", oneof.Join(deliveryModes)},
		{"message descriptor portability", oneof.Join(portabilities)},
		{"protocolDescriptor signalTransports", oneof.Join(signalTransports)},
		{"transportState structuredLane", oneof.Join(structuredLanes)},
		{"interruption.recorded reason", oneof.Join(InterruptionReasons) + " (`timeout`: the header's `timeoutMs` passed and the runtime stopped the run)"},
		{"restore.attempted mode", oneof.Join(RestoreModes)},
		{"restore.attempted outcome", oneof.Join(RestoreOutcomes)},
		{"journal.header dispatchContext.originSurface", oneof.Join(OriginSurfaces)},
		{"journal.header dispatchContext.dispatchMode", oneof.Join(DispatchModes) + " (absent context: interactive)"},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", e[0], e[1])
	}

	b.WriteString("\n## Tool calls\n\n")
	b.WriteString("An agent's tool call is journaled as two `activity.updated` records carrying `toolCall`: one as it\n")
	b.WriteString("starts, with the call's `currentTarget` (the command, path, URL or pattern), and one as it ends. The\n")
	b.WriteString("timeline shows the pair as one item (docs/api.md).\n\n")
	b.WriteString("| `toolCall` field | meaning |\n|---|---|\n")
	for _, f := range [][2]string{
		{"id", "the agent CLI's id of the call, which pairs its start and its end; absent when the CLI gives none (the start is then all there is)"},
		{"name", "the tool's name as the CLI calls it (`Bash`, `command_execution`, `read_file`, …)"},
		{"status", oneof.Join(toolCallStatuses)},
		{"error", "on a failed end: what the tool or the CLI said, clipped"},
		{"exitCode", "on a failed end: a shell command's exit code, when the CLI reports it"},
		{"output", fmt.Sprintf("on an end, when the agent's stream carries the call's output: an excerpt of it, valid UTF-8. Output of at most %d bytes (%d KiB) is kept whole; longer output keeps its first %d and its last %d bytes (cut at character boundaries) around the line `… N bytes left out …`, so an excerpt is at most %d bytes. It is the agent's output, journaled as its other output is: nothing is redacted", MaxToolOutputBytes, MaxToolOutputBytes>>10, toolOutputHead, toolOutputTail, MaxToolOutputBytes+MaxToolOutputMarker)},
		{"outputBytes", "the size in bytes of the whole output, set only when `output` was cut from it (more than " + fmt.Sprint(MaxToolOutputBytes) + ")"},
	} {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f[0], f[1])
	}

	b.WriteString("\n## Event ids, forks and resumes\n\n")
	b.WriteString("A record's **event id** is `sha256:` and the hex SHA-256 of its JSON canonicalized by RFC 8785 (JCS),\n")
	b.WriteString("computed (`eventstore.EventID`), never stored. It covers the whole record, the common fields included,\n")
	b.WriteString("so the same content in two journals, or at two sequences of one, has two ids: an event id names one\n")
	b.WriteString("record at one place, which is what a fork pins. Key order and whitespace do not change it.\n\n")
	b.WriteString("| `journal.header` field | meaning |\n|---|---|\n")
	for _, f := range [][2]string{
		{"sessionId", "the AgentSession: the execution's own id for a new session (absent reads as that), the resumed execution's session for a resume"},
		{"forkedFrom", "`{journalId, agentExecutionId, sequence, eventId}`: the fork inherits the parent's records 1…sequence; `eventId` is the event id of the parent record at `sequence` (≥ 1). The fork's journal holds only its own records. `history` (optional): `native` when the agent CLI forked its own session at the point, `reconstructed` when the fork's first message retells the journal's conversation up to it"},
		{"resumes", "`{agentExecutionId, journalId}`: the execution this run continues; `sessionId` is required and must be the resumed execution's session. Not with `forkedFrom`: a fork starts a new session. `history` (optional): `native` or `reconstructed`, as for a fork"},
		{"command", "the agent's command line as the launch gave it, absent for a CLI run as its adapter's default program; a fork or a resume runs the same"},
		{"timeoutMs", "the run's time limit in milliseconds from the launch, absent for none; when it passes the runtime stops the run as a stop does and records `interruption.recorded` with reason `timeout`. A fork or a resume does not inherit it: it has one only if its own launch gives one"},
		{"sandbox", "`{network, writable, hidden}`: the agent runs under bubblewrap (docs/architecture.md, Sandboxed agents): `network` is `host` or `none`, `writable` the paths it may change (its working directory, its CLI's state directories; the rest of the file system is read-only, with a private `/tmp`), `hidden` the paths it cannot read (the daemon's data directory and secret files). Absent for an agent run unconfined, as on every journal written before it existed"},
		{"dispatchContext", "`{originSurface, originProductId, dispatchMode, initiatedAt, scheduledFor}` (spec 004's AgentDispatchContext): where the execution was asked for and how it runs, absent for a launch that gave none (interactive). `originProductId` is 1 to 128 ASCII letters, digits and `. _ - : / @`, starting with a letter or digit; `initiatedAt` and `scheduledFor` are RFC 3339 times; `scheduledFor` is required with dispatchMode `scheduled` and refused with any other. A `queued` or `scheduled` execution stays `starting` with a `state.changed` saying so until the runtime starts it (docs/architecture.md, Dispatch and the queue)"},
		{"agentVersion", "the agent CLI's version as the CLI gave it when the runtime asked (`<program> --version`, bounded by a few seconds, asked once per program file) before the launch, at most 100 bytes; absent when the CLI was not asked (any program, an ACP agent) or gave none. What the CLI's usage lines mean depends on it ([agents.md](agents.md#token-usage-by-version))"},
	} {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f[0], f[1])
	}
	b.WriteString("\nThe store checks both links when it writes the header (`EnsureJournal`): a parent or resumed journal\n")
	b.WriteString("that does not exist, a sequence past the parent's end or an event id that is not the parent record's\n")
	b.WriteString("is refused (`ErrBadLink`) and nothing is written.\n")

	b.WriteString("\n## Slash-command records\n\n")
	b.WriteString("Slash commands (docs/commands.md) add no record kind: each is recorded the way its target is. The\n")
	b.WriteString("payloads the daemon writes for them, and for the commands agents advertise:\n\n")
	b.WriteString("| record | shape |\n|---|---|\n")
	for _, f := range [][2]string{
		{"`observation.recorded`, payload `advertisedCommands`", "`{adapterId, messages: [message descriptor]}`, source `provider-output`, confidence `authoritative`, no signal: the slash commands the agent advertised itself (Claude Code's init `slash_commands`, an ACP agent's `available_commands_update`) as adapter-scoped message descriptors of its adapter (`portability: adapter-scoped`, `adapterId` the execution's `agentId`); the newest replaces the ones before in the read model (`advertisedMessages` of the execution state). Its `observationId` is `adv-` and a digest of the list, so a list read again is recorded once"},
		{"`observation.recorded` from `/blocked`", "source `daemon`, confidence `authoritative`, a `blocked` signal with the reason, payload `{command: \"/blocked\", from: \"operator\"}`"},
		{"`observation.recorded` from `/summarize-diff`", "source `daemon`, no signal, `rawText` the summary, payload `{operation: \"worktree.summarize-diff\", command, base, files: [{path, added, deleted, binary?, new?}], fileCount, added, deleted}`; `base` is the execution's first workspace snapshot ref, or `HEAD` without one"},
		{"`observation.recorded` from `/impact`", "source `daemon`, no signal, `rawText` the summary, payload `{operation: \"worktree.impact\", command, symbol, definitions: [{path, line, text}], uses: [{path, line, text}], useCount, fileCount}`"},
		{"`observation.recorded` for a parse failure", "source `daemon`, confidence `diagnostic`, a `diagnostic` signal with code `command-parse-failed` and the message naming the shape expected, payload `{text, expected}`"},
		{"`owner-effect.recorded` from `/verify`", "effectType `verification.requested`, the owner entity of the journal, payload `{command: \"/verify\", source: \"operator\", lifecycle}`"},
		{"`message.accepted` from `/read`, `/attach`", "messageType `prompt`, source `operator`, mutatesContext, payload `{text, context: {command, path, bytes, sha256}}`: the file's text in the prompt"},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", f[0], f[1])
	}

	b.WriteString("\n## Signals\n\nA signal travels inside `observation.recorded` as `\"signal\": {\"type\": …, \"payload\": {…}}`.\n\n")
	b.WriteString("| type | payload schema key | surfaced to agents | timeline item |\n|---|---|---|---|\n")
	for _, t := range signalOrder {
		s := signalRegistry[t]
		key, tl, surfaced := s.SchemaKey, string(s.Timeline), "no"
		if key == "" {
			key = "none"
		}
		if tl == "" {
			tl = "none"
		}
		if s.Surfaced {
			surfaced = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", t, key, surfaced, tl)
	}
	for _, t := range signalOrder {
		s := signalRegistry[t]
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n", t, s.Description)
		sc, err := json.MarshalIndent(s.Schema(), "", "  ")
		if err != nil {
			return err
		}
		b.WriteString("```json\n" + string(sc) + "\n```\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
