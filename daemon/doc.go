// Package daemon opens and closes the whole agentjournal stack in one
// place: the log's NATS (embedded, joined, or a node of a cluster), the
// journal store on it, the read models and the search index fed from it,
// the policy subscriber deciding on it, the terminal registry, the runtime
// that runs the agents, the recovery of what a previous host left behind,
// and the HTTP API with MCP. The serve and run commands, the API's test
// stack (api/apitest) and its benchmark (api/apibench) all open it with
// Open and a Config; each leaves out what it does not want (a listener, the
// search index, the queue, MCP) rather than assembling its own.
//
// Layout owns the data directory's layout: the path of every file and
// directory kept there (the API token, daemon.json, the read models, the
// recordings, the output logs, the queue, the supervised agents' state) is
// derived from it, by this package and by the commands that read them.
//
// Open starts goroutines (the projector, the indexer, the policy, the
// server) and Close stops every one of them, in the reverse order of
// opening, within its context's deadline. The package does not parse
// flags, print to the user or handle signals: the commands do.
package daemon
