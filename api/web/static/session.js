// A session's screen: its runs in order, each opening its execution, and
// its tasks, todos, approvals and checkpoints; read again on every event
// about one of its runs, and when an execution starts (its next run,
// maybe).
import {api} from './api.js';
import {el, parts, badge, setBadge, dims, escaped, showError, clearError} from './dom.js';
import {NEEDS_OPERATOR, executionHref, sessionHref, seqLink, timeOf, when} from './format.js';
import {todoItems, approvalItems} from './contract.js';

export function createSession(root) {
  const p = parts(root);
  let id = '';
  let data = null;
  let timer = null;
  let ask = 0;
  let openTodos = new Set();

  const screen = {
    async open(session) {
      if (session !== id) {
        screen.close();
        id = session;
        openTodos = new Set();
        for (const b of [p.runs, p.tasks, p.todos, p.approvals, p.checkpoints, p.dims]) b.replaceChildren();
        clearError(p.error);
      }
      p.id.textContent = session;
      await screen.refresh();
    },

    close() {
      id = '';
      data = null;
      ask++;
      clearTimeout(timer);
    },

    // changed reads the session again after an event about one of its
    // runs, or a new execution, which may be its next run.
    changed(executionId, name) {
      if (!id) return;
      const runs = (data && data.session && data.session.runIds) || [];
      if (name !== 'execution.started' && !runs.includes(executionId)) return;
      clearTimeout(timer);
      timer = setTimeout(() => screen.refresh(), 200);
    },

    async refresh() {
      const of = id;
      const asked = ++ask;
      try {
        const d = await api('GET', `/v1/sessions/${encodeURIComponent(of)}`);
        if (asked !== ask || of !== id) return;
        clearError(p.error);
        data = d;
        screen.render();
      } catch (err) {
        if (asked === ask && of === id) showError(p.error, err);
      }
    },

    render() {
      const ss = data.session || {};
      setBadge(p.status, ss.status, 'session');
      setBadge(p.resumable, ss.resumable ? 'resumable' : 'not resumable', 'resumable');
      p.meta.textContent = [ss.agentId && `agent ${ss.agentId}`, ss.productId && `product ${ss.productId}`, ss.userId && `user ${ss.userId}`]
        .filter(Boolean).join(' · ');
      const runs = data.runs || [];
      p.runs.replaceChildren(...(runs.length ? runs.map((r) => runItem(r, ss)) : [el('li', {class: 'muted empty'}, 'No runs.')]));
      const tasks = data.tasks || [];
      p.tasks.replaceChildren(...(tasks.length ? tasks.map((tk) => el('li', {class: 'task', 'data-task': tk.taskId, 'data-status': tk.status},
        el('div', {class: 'contract-head'}, badge(tk.status, 'task'), escaped(el('span', {class: 'task-title'}), tk.title || tk.taskId)),
        el('div', {class: 'item-detail muted'}, 'runs ', (tk.runIds || []).map((r, i) => [i ? ', ' : '', el('a', {href: executionHref(r)}, r)]))))
        : [el('li', {class: 'muted empty'}, 'No tasks.')]));
      const single = runs.length === 1 ? runs[0].runId : '';
      p.todos.replaceChildren(...todoItems(data.todos || [], single, openTodos));
      p.approvals.replaceChildren(...approvalItems(data.approvals || [], true));
      const cps = data.checkpoints || [];
      p.checkpoints.replaceChildren(...(cps.length ? cps.map(checkpointItem) : [el('li', {class: 'muted empty'}, 'No checkpoints.')]));
      dims(p.dims, [
        ['Session', el('code', {}, ss.sessionId || id)],
        ss.parentSessionId && ['Parent session', el('a', {href: sessionHref(ss.parentSessionId)}, ss.parentSessionId)],
        ['Status', badge(ss.status, 'session')],
        ['Agent', ss.agentId],
        ['Product', ss.productId],
        ['User', ss.userId],
        ['Current task', ss.currentTaskId ? el('code', {}, ss.currentTaskId) : ''],
        ['Runs', String((ss.runIds || []).length)],
        ['Memory', refs(ss.memoryRefs)],
        ['Artifacts', refs(ss.artifactRefs)],
        ['Approvals', refs(ss.approvalRefs)],
        ['Dispatch', ss.dispatchContext ? el('pre', {class: 'raw'}, JSON.stringify(ss.dispatchContext, null, 2)) : '—'],
        ['Started', when(ss.startedAt)],
        ['Updated', when(ss.updatedAt)],
      ]);
    },
  };
  return screen;
}

// runItem is one run of a session: its execution, status, task and times,
// and how it derives from another.
function runItem(r, ss) {
  const relation = runRelation(r);
  return el('li', {class: 'run', 'data-run': r.runId, 'data-status': r.status},
    el('div', {class: 'contract-head'},
      el('a', {href: executionHref(r.runId)}, el('code', {}, r.runId)),
      badge(r.status, 'run'),
      r.lifecycle && r.lifecycle !== r.status && badge(r.lifecycle, 'lifecycle'),
      NEEDS_OPERATOR.has(r.attention) && badge(r.attention, 'attention'),
      r.runId && ss.currentTaskId && r.taskId === ss.currentTaskId && el('span', {class: 'muted small'}, 'current task')),
    el('div', {class: 'item-detail muted'},
      r.agentId ? `agent ${r.agentId} · ` : '', r.taskId ? ['task ', el('code', {}, r.taskId), ' · '] : '',
      'started ', timeOf(r.startedAt), r.endedAt ? [' · ended ', timeOf(r.endedAt)] : ''),
    relation.length ? el('div', {class: 'item-detail'}, relation) : null);
}

// runRelation says how a run derives from another (it resumes it, or was
// forked from it) and what interrupted it.
function runRelation(r) {
  const out = [];
  if (r.resumes) out.push(['resumes ', el('a', {href: executionHref(r.resumes)}, r.resumes)]);
  if (r.forkedFrom) out.push(['forked from ', el('a', {href: executionHref(r.forkedFrom)}, r.forkedFrom)]);
  if (r.interruption) out.push(['interrupted: ', escaped(el('span'), r.interruption)]);
  return out.map((x, i) => [i ? ' · ' : '', x]);
}

function checkpointItem(c) {
  const sum = c.stateSummary || {};
  return el('li', {class: 'checkpoint', 'data-checkpoint': c.checkpointId, 'data-run': c.runId},
    el('div', {class: 'contract-head'},
      badge(c.trigger, 'trigger'), seqLink(c.runId, c.sequence),
      c.statusAtCapture && badge(c.statusAtCapture, 'run'),
      timeOf(c.createdAt)),
    sum.title ? escaped(el('div', {class: 'checkpoint-title'}), sum.title) : null,
    sum.summary ? escaped(el('div', {class: 'item-detail checkpoint-summary'}), sum.summary) : null,
    el('div', {class: 'item-detail muted'}, 'run ', el('a', {href: executionHref(c.runId)}, c.runId),
      c.source ? ` · source ${c.source}` : '',
      ` · ${(c.todoIds || []).length} todos · ${(c.artifactRefs || []).length} artifacts · ${(c.approvalRefs || []).length} approvals`),
    c.resumeToken ? el('div', {class: 'item-detail muted'}, 'resume token ', el('code', {}, c.resumeToken)) : null);
}

// refs shows a list of references, or a dash.
function refs(list) {
  return list && list.length ? list.map((r, i) => [i ? ', ' : '', el('code', {}, typeof r === 'string' ? r : JSON.stringify(r))]) : '—';
}
