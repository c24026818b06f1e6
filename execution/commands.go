package execution

import (
	"encoding/json"

	"github.com/agentjournal/agentjournal/eventstore"
)

// AdvertisedCommandsKey is the payload key of the observation that records
// the slash commands an agent advertised itself (Claude Code's init
// slash_commands, ACP's available_commands_update) as adapter-scoped
// message descriptors. Persisted: never rename.
const AdvertisedCommandsKey = "advertisedCommands"

// Advertised is the payload of an advertised-commands observation.
type Advertised struct {
	AdapterID string                         `json:"adapterId"`
	Messages  []eventstore.MessageDescriptor `json:"messages"`
}

// advertisedOf reads an advertised-commands observation.
func advertisedOf(o *eventstore.Observation) (Advertised, bool) {
	v, ok := o.Payload[AdvertisedCommandsKey]
	if !ok || o.Signal != nil {
		return Advertised{}, false
	}
	if a, ok := v.(Advertised); ok {
		return a, true
	}
	b, err := json.Marshal(v)
	var a Advertised
	if err != nil || json.Unmarshal(b, &a) != nil {
		return Advertised{}, false
	}
	return a, true
}
