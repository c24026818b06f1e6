package eventstore

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
		{"scope", "the owning Entity kind: " + joinValues(OwnerEntities)},
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

	b.WriteString("\n## Enumerations\n\n| field | accepted values |\n|---|---|\n")
	for _, e := range [][2]string{
		{"message.accepted source", joinValues(messageSources)},
		{"message.delivery status", joinValues(deliveryStatuses)},
		{"message.delivery transport", joinValues(deliveryTransports)},
		{"observation.recorded source", joinValues(observationSources)},
		{"observation.recorded confidence", joinValues(confidences)},
		{"decision.recorded action", joinValues(decisionActions)},
		{"state.changed lifecycle", joinValues(Lifecycles) + " (never `awaiting-input`: an input request is running + awaiting-operator + currentInputRequestId)"},
		{"state.changed attention", joinValues(Attentions)},
		{"state.changed / activity.updated activity", joinValues(Activities)},
		{"state.changed currentInputRequestId", "absent (unchanged), a request id (set), `null` (cleared)"},
		{"activity.updated currentTarget.kind", joinValues(targetKinds)},
		{"activity.updated toolCall.status", joinValues(toolCallStatuses)},
		{"protocolDescriptor sessionShape", joinValues(SessionShapes) + " (absent for agents without a provider session)"},
		{"protocolDescriptor approvals.mode", joinValues(approvalModes)},
		{"plan signal items[].status", joinValues(PlanItemStatuses)},
		{"needs_input signal kind", joinValues(inputKinds) + " (absent means question)"},
		{"protocolDescriptor posture", joinValues(Postures)},
		{"message descriptor delivery", joinValues(deliveryModes)},
		{"message descriptor portability", joinValues(portabilities)},
		{"protocolDescriptor signalTransports", joinValues(signalTransports)},
		{"transportState structuredLane", joinValues(structuredLanes)},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", e[0], e[1])
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
