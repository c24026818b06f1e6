// The runtime contract's shapes (spec 004): the lists of todos and of
// approval checkpoints, shared by an execution's page and a session's, and
// the Todos and Approvals cards of an execution's page, which read them
// again when their part of the execution changes, and show them as of the
// record travelled to.
import {api, execPath} from './api.js';
import {el, badge, escaped, parts, showError, clearError} from './dom.js';
import {executionHref, seqLink, timeOf} from './format.js';

// todoItems lists AgentTodos: each one's text and status, and its status
// history behind a disclosure whose state open (a Set of todo ids) keeps
// across redraws. run is the execution whose journal holds the history's
// sequences, or '' when it is not known.
export function todoItems(todos, run, open) {
  if (!todos.length) return [el('li', {class: 'muted empty'}, 'No todos: the agent has sent no plan.')];
  return todos.map((td) => {
    const history = td.history || [];
    const details = el('details', {class: 'todo-history', open: open.has(td.todoId)},
      el('summary', {}, `${history.length} change${history.length === 1 ? '' : 's'}`),
      el('ol', {}, history.map((h) => el('li', {'data-seq': h.sequence, 'data-status': h.status},
        seqLink(run, h.sequence), ' ', badge(h.status, 'todo'),
        h.text && h.text !== td.text ? escaped(el('span', {class: 'todo-was'}), h.text) : null,
        timeOf(h.at)))));
    details.addEventListener('toggle', () => {
      if (details.open) open.add(td.todoId);
      else open.delete(td.todoId);
    });
    return el('li', {class: 'todo', 'data-todo': td.todoId, 'data-status': td.status},
      el('div', {class: 'contract-head'}, badge(td.status, 'todo'), escaped(el('span', {class: 'todo-text'}), td.text || '')),
      details);
  });
}

// approvalItems lists AgentApprovalCheckpoints: the question or the
// permission and its tool, the status, the answer, and who resolved it
// and when; withRun names each one's run.
export function approvalItems(approvals, withRun) {
  if (!approvals.length) return [el('li', {class: 'muted empty'}, 'No approvals: the agent has asked nothing.')];
  return approvals.map((a) => {
    const what = a.kind === 'permission' ? 'permission' + (a.tool ? ': ' : '') : 'question';
    const resolved = a.resolvedBy
      ? el('div', {class: 'item-detail approval-resolved'}, el('b', {}, 'Resolved by: '), a.resolvedBy,
        a.resolvedAt ? [' · ', timeOf(a.resolvedAt)] : null, a.resolvedSequence ? [' · ', seqLink(a.runId, a.resolvedSequence)] : null)
      : null;
    return el('li', {class: 'approval', 'data-approval': a.approvalId, 'data-status': a.status, 'data-run': a.runId},
      el('div', {class: 'contract-head'},
        badge(a.status, 'approval'),
        el('span', {class: 'approval-kind'}, what, a.kind === 'permission' && a.tool ? escaped(el('code', {class: 'approval-tool'}), a.tool) : null),
        withRun && a.runId ? el('span', {class: 'approval-run muted'}, 'run ', el('a', {href: executionHref(a.runId)}, a.runId)) : null,
        seqLink(a.runId, a.requestSequence),
        timeOf(a.requestedAt)),
      escaped(el('div', {class: 'approval-question'}), a.question || '(no question text)'),
      a.choices && a.choices.length ? escaped(el('div', {class: 'item-detail muted approval-choices'}), 'Choices: ' + a.choices.join(' / ')) : null,
      a.answer ? el('div', {class: 'item-detail approval-answer'}, el('b', {}, 'Answer: '), escaped(el('span'), a.answer)) : null,
      resolved);
  });
}

// contractCard is a card that lists one of an execution's contract shapes:
// it reads route, takes the list from the answer's key, counts it and
// draws its items. Travelling back in time it draws, from the list read
// last, the list as of the sequence shown (asOf), with no request: every
// entry carries the sequences of its changes.
// x.view() is what the screen shows now, as of which a read that lands
// is drawn.
function contractCard(root, x, {route, key, count, items, asOf}) {
  const p = parts(root);
  let id = '';
  let ask = 0; // the newest read asked for; older answers are dropped
  let held = null; // the list as last read, live
  let shown = ''; // what is drawn, to leave it alone when nothing changed
  const card = {
    open(execution) {
      id = execution;
      ask++;
      held = null;
      shown = '';
      root.dataset.asof = '0';
      p.list.replaceChildren();
      p.count.textContent = '';
      clearError(p.error);
    },

    // close lets the execution go: its list stays drawn in the hidden
    // screen, but no longer as of a position travelled to, which the
    // next execution opened (or this one again) has not chosen yet.
    close() {
      id = '';
      ask++;
      shown = '';
      root.dataset.asof = '0';
    },

    async refresh() {
      const asked = ++ask;
      const of = id;
      try {
        const data = await api('GET', execPath(of, route));
        if (asked !== ask) return;
        clearError(p.error);
        held = data[key] || [];
        card.render(x.view());
      } catch (err) {
        if (asked === ask) showError(p.error, err);
      }
    },

    // render draws the list as of what the screen shows.
    render(v) {
      if (!held) return;
      const seq = v && !v.live && v.tt ? v.tt.seq : 0;
      const list = seq ? asOf(held, seq) : held;
      const sig = seq + '|' + JSON.stringify(list);
      if (sig === shown) return;
      shown = sig;
      p.count.textContent = count(list);
      p.list.replaceChildren(...items(list, id));
      root.dataset.asof = String(seq);
    },
  };
  return card;
}

// todosAsOf is the todos as they stood at record seq: those the plan had
// by then, each with its text, status and history up to there.
export function todosAsOf(todos, seq) {
  const out = [];
  for (const td of todos) {
    const history = (td.history || []).filter((h) => h.sequence <= seq);
    if (!history.length) continue;
    const last = history[history.length - 1];
    out.push({...td, status: last.status, text: last.text || td.text, history});
  }
  return out;
}

// approvalsAsOf is the approvals as they stood at record seq: those asked
// by then, pending when their answer came later.
export function approvalsAsOf(approvals, seq) {
  const out = [];
  for (const a of approvals) {
    if (a.requestSequence && a.requestSequence > seq) continue;
    if (!a.resolvedSequence || a.resolvedSequence <= seq) {
      out.push(a);
      continue;
    }
    const {answer, resolvedBy, resolvedAt, resolvedSequence, ...open} = a;
    out.push({...open, status: 'pending'});
  }
  return out;
}

// createTodos is the Todos card: each todo with its status history, whose
// disclosures stay open as the card is drawn again.
export function createTodos(root, x) {
  let open = new Set();
  const c = contractCard(root, x, {
    route: '/todos', key: 'todos',
    count: (list) => list.length ? `${list.filter((t) => t.status === 'done').length} of ${list.length} done` : '',
    items: (list, id) => todoItems(list, id, open),
    asOf: todosAsOf,
  });
  const reset = c.open;
  c.open = (id) => {
    open = new Set();
    reset(id);
  };
  return c;
}

// createApprovals is the Approvals card.
export function createApprovals(root, x) {
  return contractCard(root, x, {
    route: '/approvals', key: 'approvals',
    count: (list) => {
      const pending = list.filter((a) => a.status === 'pending').length;
      return pending ? `${pending} pending` : '';
    },
    items: (list) => approvalItems(list),
    asOf: approvalsAsOf,
  });
}
