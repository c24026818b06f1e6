package claude

import "github.com/agentjournal/agentjournal/runtime/agent"

// unsettle keeps the largest usage a line gave for a message until a
// result counts it. A message without an id cannot be told from another
// and is not kept.
func (d *Driver) unsettle(id string, in, out *int64) {
	if id == "" {
		return
	}
	i, o := agent.Deref(agent.NonNegative(in)), agent.Deref(agent.NonNegative(out))
	for k := range d.unsettled {
		if u := &d.unsettled[k]; u.id == id {
			u.in, u.out = max(u.in, i), max(u.out, o)
			return
		}
	}
	if len(d.unsettled) < maxUnsettled {
		d.unsettled = append(d.unsettled, unsettledMessage{id: id, in: i, out: o})
	}
}

// count adds increments to what was counted since the last result.
func (d *Driver) count(in, out int64) {
	d.window[0] = agent.AddSat(d.window[0], in)
	d.window[1] = agent.AddSat(d.window[1], out)
}

// resultUsage adds what the result says the server counted since the
// previous result beyond what the lines in between added.
func (d *Driver) resultUsage(usage *claudeUsage, since, model map[string]claudeModelUsage) {
	var in, out *int64
	switch {
	case since != nil:
		t := sumModels(since)
		in, out = &t.Input, &t.Output
	case model != nil:
		t := d.modelGrowth(sumModels(model), usage)
		in, out = &t.Input, &t.Output
	case usage != nil:
		in, out = agent.NonNegative(usage.input()), agent.NonNegative(usage.OutputTokens)
	}
	var dIn, dOut int64
	if in != nil && *in > d.window[0] {
		dIn = *in - d.window[0]
	}
	if out != nil && *out > d.window[1] {
		dOut = *out - d.window[1]
	}
	d.Increment(dIn, dOut)
	d.window, d.behind, d.unsettled = [2]int64{}, false, nil
}

// sumModels adds up a per-model usage map.
func sumModels(models map[string]claudeModelUsage) agent.Tokens {
	var t agent.Tokens
	for _, m := range models {
		t.Input = agent.AddSat(t.Input, agent.Deref(agent.SumCounts(m.InputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens)))
		t.Output = agent.AddSat(t.Output, agent.Deref(agent.NonNegative(m.OutputTokens)))
	}
	return t
}

// modelGrowth is what a result's modelUsage (the process's running totals,
// now) grew by since the process's previous result, and never less than
// the query's own result.usage. A process's first result grows from zero,
// from what the runs before it counted when it resumed a session, and is
// the query's own usage when it forked one.
func (d *Driver) modelGrowth(now agent.Tokens, usage *claudeUsage) agent.Tokens {
	var from agent.Tokens
	switch {
	case d.model != nil:
		from = *d.model
	case d.cont != nil && d.cont.Fork:
		from = now
	case d.cont != nil:
		from = d.before
	}
	d.model = &now
	grown := agent.Tokens{Input: max(now.Input-from.Input, 0), Output: max(now.Output-from.Output, 0)}
	if usage != nil {
		grown.Input = max(grown.Input, agent.Deref(agent.NonNegative(usage.input())))
		grown.Output = max(grown.Output, agent.Deref(agent.NonNegative(usage.OutputTokens)))
	}
	return grown
}
