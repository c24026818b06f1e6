package client

import "github.com/agentjournal/agentjournal/api/wire"

// The bodies the client sends and reads are the daemon's own, declared
// once in package wire; these are their names here.
type (
	// Agent is one agent the daemon launches.
	Agent = wire.Agent
	// AgentCatalog is the answer of Agents.
	AgentCatalog = wire.AgentCatalog

	// Hosts is the answer of Hosts: the fleet as the daemon sees it.
	Hosts = wire.Hosts
	// Host is one host of the fleet.
	Host = wire.Host

	// Health is the answer of GET /healthz.
	Health = wire.Health
	// Storage is the daemon's last measurement of the disk holding its
	// log.
	Storage = wire.Storage
	// PolicyShare is a daemon's share of the policy's partitions.
	PolicyShare = wire.PolicyShare

	// Summary is an execution as List gives it.
	Summary = wire.Summary
	// Execution is an execution as the API shows it: its projected state
	// (without the timeline, which Timeline pages) and what the daemon
	// knows live.
	Execution = wire.Execution
	// Live is what the daemon's runtime knows of an execution that the
	// journal does not hold.
	Live = wire.Live
	// LaunchRequest is the body of Launch.
	LaunchRequest = wire.LaunchRequest
	// Placement says which hosts of the fleet may run a launch.
	Placement = wire.Placement
	// LaunchSandbox asks to run a launch's agent sandboxed, or not.
	LaunchSandbox = wire.LaunchSandbox
	// ForkRequest is the body of Fork.
	ForkRequest = wire.ForkRequest
	// ResumeRequest is the body of Resume.
	ResumeRequest = wire.ResumeRequest
	// ImportedCommand is what a fork or a resume of an imported journal
	// would run (ForkRequest.ConfirmImported, Error.Imported).
	ImportedCommand = wire.ImportedCommand
	// Launched answers Launch, Fork and Resume.
	Launched = wire.Launched
	// ScopedToken is a token for one execution: what its agent gets at
	// launch.
	ScopedToken = wire.ScopedToken
	// Message is the body of SendMessage.
	Message = wire.Message
	// MessageAck answers SendMessage.
	MessageAck = wire.MessageAck
	// Observation is the body of RecordObservation.
	Observation = wire.Observation
	// Signal is an observation's surfaced signal.
	Signal = wire.Signal
	// ObservationAck answers RecordObservation with the policy's
	// decision.
	ObservationAck = wire.ObservationAck
	// Decision is the policy's decision on an observation.
	Decision = wire.Decision
	// Queue is the daemon's queue of launches waiting to start.
	Queue = wire.Queue
	// QueuedRun is a queued or scheduled launch that has not started.
	QueuedRun = wire.QueuedRun
	// Replay is an execution's state as of a journal sequence.
	Replay = wire.Replay

	// ImportResult is the daemon's answer to ImportJournal.
	ImportResult = wire.ImportResult
	// RebuildProgress is one line of the answer to Rebuild.
	RebuildProgress = wire.RebuildProgress

	// CommandRequest is the body of Command.
	CommandRequest = wire.CommandRequest
	// CommandResult answers Command.
	CommandResult = wire.CommandResult
	// InvokeResult is what carrying out a command recorded.
	InvokeResult = wire.InvokeResult

	// Session is one session as Session reads it.
	Session = wire.Session
	// CheckpointRequest is the body of Checkpoint.
	CheckpointRequest = wire.CheckpointRequest

	// Lineage is an execution's lineage as Lineage reads it.
	Lineage = wire.Lineage
	// Snapshots are the snapshots of a resource taken at or before a
	// time, newest first.
	Snapshots = wire.Snapshots

	// SearchResult is the answer of Search.
	SearchResult = wire.SearchResult
	// SearchHit is one matching record.
	SearchHit = wire.SearchHit

	// EventData is the data of an event of GET /v1/events (an Event's
	// Data), but for overflow.
	EventData = wire.EventData

	// Output is a page of an execution's output, the answer of GET
	// /v1/executions/{id}/output.
	Output = wire.Output
)

// The protocols an agent's CLI is spoken to in (Agent.Protocol).
const (
	ProtocolStdin      = wire.ProtocolStdin
	ProtocolStreamJSON = wire.ProtocolStreamJSON
	ProtocolExec       = wire.ProtocolExec
	ProtocolACP        = wire.ProtocolACP
	ProtocolAppServer  = wire.ProtocolAppServer
)
