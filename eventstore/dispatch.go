package eventstore

import (
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/internal/textclip"
)

// OriginSurface is where a dispatched execution was asked for (spec 004,
// AgentDispatchContext). Persisted in headers: never rename one.
type OriginSurface string

const (
	OriginBrowser    OriginSurface = "browser"
	OriginMobile     OriginSurface = "mobile"
	OriginDesktop    OriginSurface = "desktop"
	OriginWeb        OriginSurface = "web"
	OriginProductAPI OriginSurface = "product-api"
)

// OriginSurfaces lists every accepted origin surface.
var OriginSurfaces = []OriginSurface{OriginBrowser, OriginMobile, OriginDesktop, OriginWeb, OriginProductAPI}

// DispatchMode says when a dispatched execution runs. Persisted in
// headers: never rename one.
type DispatchMode string

const (
	// DispatchInteractive starts at once; a launch without a dispatch
	// context is interactive.
	DispatchInteractive DispatchMode = "interactive"
	// DispatchQueued waits for a free slot under the runtime's limit of
	// running agents.
	DispatchQueued DispatchMode = "queued"
	// DispatchScheduled waits for its scheduledFor time, then for a slot.
	DispatchScheduled DispatchMode = "scheduled"
	// DispatchRemote starts at once, as interactive: the request came
	// from a trusted executor elsewhere.
	DispatchRemote DispatchMode = "remote"
)

// DispatchModes lists every accepted dispatch mode.
var DispatchModes = []DispatchMode{DispatchInteractive, DispatchQueued, DispatchScheduled, DispatchRemote}

// Waits reports whether a launch in this mode is queued rather than
// started at once.
func (m DispatchMode) Waits() bool { return m == DispatchQueued || m == DispatchScheduled }

// MaxOriginProductIDLength bounds a dispatch context's originProductId.
const MaxOriginProductIDLength = 128

// originProductAccepted says what an originProductId may be.
const originProductAccepted = "want 1 to 128 ASCII letters, digits and . _ - : / @, starting with a letter or digit"

// DispatchContext is where an execution was asked for and how it is to
// run (spec 004's AgentDispatchContext), carried by the journal header.
// Times are kept as the launch gave them, RFC 3339 strings, so the header
// says exactly what the dispatching product sent.
type DispatchContext struct {
	OriginSurface   OriginSurface `json:"originSurface"`
	OriginProductID string        `json:"originProductId"`
	DispatchMode    DispatchMode  `json:"dispatchMode"`
	// InitiatedAt is when the origin asked for the execution.
	InitiatedAt string `json:"initiatedAt"`
	// ScheduledFor is the earliest time a scheduled execution starts;
	// required with dispatchMode scheduled and refused with any other.
	ScheduledFor string `json:"scheduledFor,omitempty"`
}

// Scheduled returns the time before which the execution does not start,
// zero when it has none.
func (d *DispatchContext) Scheduled() time.Time {
	if d == nil || d.ScheduledFor == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339, d.ScheduledFor)
	return t
}

// Validate checks a dispatch context on its own, as a launch gets it,
// naming each field as "dispatchContext.<field>"; it reports every
// problem at once, as a *ValidationError of the header.
func (d *DispatchContext) Validate() error {
	var p problems
	d.validate(&p, "dispatchContext")
	return p.err(KindHeader)
}

func (d *DispatchContext) validate(p *problems, field string) {
	enum(p, field+".originSurface", d.OriginSurface, OriginSurfaces)
	switch id := d.OriginProductID; {
	case id == "":
		p.add(field+".originProductId", "required ("+originProductAccepted+")")
	case len(id) > MaxOriginProductIDLength || !safeProductID(id):
		p.add(field+".originProductId", fmt.Sprintf("%q is not accepted (%s)", textclip.Bytes(id, maxQuotedValue), originProductAccepted))
	}
	enum(p, field+".dispatchMode", d.DispatchMode, DispatchModes)
	rfc3339(p, field+".initiatedAt", d.InitiatedAt, true)
	switch {
	case d.DispatchMode == DispatchScheduled:
		rfc3339(p, field+".scheduledFor", d.ScheduledFor, true)
	case d.ScheduledFor != "":
		p.add(field+".scheduledFor", fmt.Sprintf("only with dispatchMode %s (got dispatchMode %q)", DispatchScheduled, string(d.DispatchMode)))
	}
}

// maxQuotedValue bounds how much of a refused value its error quotes.
const maxQuotedValue = 64

// rfc3339 checks a time written as RFC 3339.
func rfc3339(p *problems, field, v string, required bool) {
	switch {
	case v == "" && required:
		p.add(field, "required (want an RFC 3339 time such as 2026-01-02T15:04:05Z)")
	case v == "":
	default:
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			p.add(field, fmt.Sprintf("%q is not an RFC 3339 time (want one such as 2026-01-02T15:04:05Z)", textclip.Bytes(v, maxQuotedValue)))
		}
	}
}

// safeProductID reports whether id holds only the characters a product
// id may: it is shown in listings and logs, so nothing that could be
// read as markup, a control or a separator.
func safeProductID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != '-' && c != ':' && c != '/' && c != '@' {
			return false
		}
	}
	return true
}
