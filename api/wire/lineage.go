package wire

import (
	"time"

	"github.com/agentjournal/agentjournal/lineage"
)

// Lineage answers GET /v1/executions/{id}/lineage: the execution's
// ancestry and fork tree, its history (a fork's inherited prefix first,
// marked), its tool calls and the snapshots of its working directory at a
// time. The graph (GET /v1/graph) and an event's origin (GET
// /v1/events/{eventId}/origin) are answered as lineage.Graph and
// lineage.Origin.
type Lineage struct {
	lineage.Lineage
	History   []lineage.HistoryItem  `json:"history"`
	ToolCalls []lineage.ToolCallPair `json:"toolCalls"`
	Snapshots Snapshots              `json:"snapshots"`
}

// Snapshots are the snapshots of a resource taken at or before At, newest
// first.
type Snapshots struct {
	Resource string             `json:"resource"`
	At       time.Time          `json:"at"`
	Items    []lineage.Snapshot `json:"items"`
}
