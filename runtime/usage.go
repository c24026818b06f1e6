package runtime

import (
	"context"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// maxResumeChain bounds the executions walked back through resume links
// to total what a session's earlier runs counted.
const maxResumeChain = 100

// countBefore gives a driver whose CLI reports its session's running
// totals (agent.SessionCounter) what the executions whose CLI session this
// one continues counted: the resumed execution, and the ones it resumed in
// turn, back to the run that started the session. Each of them counted
// only its own tokens, so their sum is the session's total before this
// run. A resume that retold the conversation started a new session of the
// CLI's, which ends the walk.
func (rt *Runtime) countBefore(ctx context.Context, driver Driver, resumes *eventstore.ResumeLink) {
	sc, ok := driver.(agent.SessionCounter)
	if !ok || !nativeResume(resumes) {
		return
	}
	var total agent.Tokens
	link := resumes
	for range maxResumeChain {
		ref, err := rt.cfg.Store.Lookup(ctx, link.AgentExecutionID)
		if err != nil {
			rt.cfg.Logger.Error("total the usage of a resumed session", "execution", link.AgentExecutionID, "err", err)
			break
		}
		st, err := execution.ReplayLineage(ctx, rt.cfg.Store, ref)
		if err != nil {
			rt.cfg.Logger.Error("total the usage of a resumed session", "execution", link.AgentExecutionID, "err", err)
			break
		}
		total.Input = agent.AddSat(total.Input, agent.Deref(st.Usage.InputTokens))
		total.Output = agent.AddSat(total.Output, agent.Deref(st.Usage.OutputTokens))
		if !nativeResume(st.Resumes) {
			break
		}
		link = st.Resumes
	}
	sc.CountedBefore(total)
}

// nativeResume reports a resume link whose run continued the CLI's own
// session; a link written before links said how is taken as one.
func nativeResume(l *eventstore.ResumeLink) bool {
	return l != nil && l.History != eventstore.HistoryReconstructed
}
