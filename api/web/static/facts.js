// The Status, Latest activity and Journal cards of an execution's screen:
// the state shown (live, or as of the sequence travelled to), drawn as
// lists of terms.
import {el, parts, badge, dims} from './dom.js';
import {portability, when} from './format.js';

// createStatus is the Status card: the status dimensions.
export function createStatus(root) {
  const p = parts(root);
  return {
    render(v) {
      const st = v.state;
      const lv = v.current.live || {};
      dims(p.dims, [
        ['Lifecycle', [badge(st.lifecycle, 'lifecycle'), st.lifecycleReason ? ` ${st.lifecycleReason}` : '']],
        ['Attention', badge(st.attention, 'attention')],
        ['Activity', st.activity],
        ['Input request', st.currentInputRequestId ? `${st.currentInputRequestId}: ${st.currentInputQuestion || ''}` : 'none'],
        ['Posture', st.posture],
        ['Terminal', st.terminalAttached ? 'attached' : 'none'],
        v.live && ['Process', lv.running ? 'running in this daemon' : 'not running here'],
        ['Created', when(st.createdAt)],
        ['Updated', when(st.updatedAt)],
        st.endedAt && ['Ended', when(st.endedAt)],
      ]);
    },
  };
}

// createLatest is the Latest activity card: activity, progress and token
// telemetry.
export function createLatest(root) {
  const p = parts(root);
  return {
    render(v) {
      const l = v.state.latest || {};
      const t = l.telemetry;
      const pr = l.progress;
      const n = (x) => (x === undefined || x === null ? '—' : Number(x).toLocaleString());
      let progress = '';
      if (pr) {
        progress = pr.summary || '';
        if (pr.units) progress += ` (${n(pr.units.completed)} of ${n(pr.units.total)} ${pr.units.unit || ''})`.replace(/ \)$/, ')');
        if (pr.detail) progress += ` — ${pr.detail}`;
      }
      const caps = l.capabilities ? Object.entries(l.capabilities).filter(([, on]) => on).map(([k]) => k).join(', ') : '';
      dims(p.dims, [
        ['Activity', l.activity],
        ['Progress', progress],
        ['Tokens', t ? `${n(t.inputTokens)} in · ${n(t.outputTokens)} out · ${n(t.totalTokens)} total` : 'no telemetry yet'],
        t && t.activeToolName && ['Active tool', t.activeToolName],
        l.currentTarget && ['Target', `${l.currentTarget.kind}: ${l.currentTarget.label || l.currentTarget.path || ''}`],
        caps && ['Capabilities', caps],
        ['As of', l.sequence ? `sequence ${l.sequence}, ${when(l.at)}` : '—'],
      ]);
    },
  };
}

// createJournal is the Journal card: the journal's metadata and the
// execution's protocol descriptor.
export function createJournal(root) {
  const p = parts(root);
  return {
    render(v) {
      const st = v.state;
      const j = st.journal || {};
      const pd = st.protocolDescriptor || {};
      const msgs = (pd.messages || []).map((m) => `${m.type} (${portability(m)})`).join(', ');
      dims(p.dims, [
        ['Journal', el('code', {}, j.journalId || '')],
        ['Execution', el('code', {}, st.id)],
        ['Owner', `${j.ownerEntity}/${j.ownerId}`],
        ['Agent', st.agentId],
        ['Records', String(j.recordCount)],
        ['Last sequence', String(j.lastSequence)],
        ['Messages', msgs],
        ['Signals', (pd.signals || []).join(', ')],
        ['Signal transports', (pd.signalTransports || []).join(', ')],
        ['Working directory', st.workingDirectory || ''],
      ]);
    },
  };
}
