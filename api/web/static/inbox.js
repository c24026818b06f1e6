// The approvals inbox: every open permission request and question across
// executions, the newest first, each answerable where it is listed:
// Allow or Deny for a permission (or the choices the agent offered), a
// question's choices as buttons, and a box for any other answer. The
// answer is an answer message to the request (POST …/messages), as the
// execution's own page sends it.
//
// The inbox is read when the console signs in, for the count in the
// navigation: the executions that need a person, then the approvals of
// each that has a request open. A live event reads one execution's
// approvals again only when its open request changed.
import {api, execPath, listExecutions, selfHost} from './api.js';
import {el, parts, badge, showError, clearError, describe} from './dom.js';
import {NEEDS_OPERATOR, executionHref, hostTag, when} from './format.js';

// INBOX_HREF is the inbox's address.
export const INBOX_HREF = '#/approvals';

// The answers a permission takes when the agent offered no choices
// (eventstore.AnswerAllow and AnswerDeny).
const ALLOW = 'allow';
const DENY = 'deny';

// createInbox makes the screen; counted(n) is told how many requests are
// open whenever that changes.
export function createInbox(root, counted) {
  const p = parts(root);
  let open = new Map(); // execution id -> {summary, approvals: the pending ones}
  let seen = new Map(); // execution id -> the request it had open, as last seen
  let stale = new Set(); // executions whose approvals are to be read again
  let timer = null;
  let active = false;
  let gen = 0; // bumped by load: reads of an older load are dropped
  let results = new Map(); // approval key -> what answering it said

  const keyOf = (execution, a) => `${execution}:${a.approvalId}`;

  // readApprovals reads one execution's approvals and keeps the pending
  // ones.
  async function readApprovals(summary, of) {
    const data = await api('GET', execPath(summary.id, '/approvals'));
    if (of !== gen) return;
    const pending = (data.approvals || []).filter((a) => a.status === 'pending');
    if (pending.length) open.set(summary.id, {summary, approvals: pending});
    else open.delete(summary.id);
  }

  function count() {
    let n = 0;
    for (const e of open.values()) n += e.approvals.length;
    return n;
  }

  function changed() {
    counted(count());
    if (active) draw();
  }

  async function flush() {
    const ids = [...stale];
    stale = new Set();
    const of = gen;
    for (const id of ids) {
      const summary = seen.get(id);
      if (!summary) continue;
      try {
        await readApprovals(summary, of);
      } catch (err) {
        if (active) showError(p.error, err);
      }
    }
    if (of === gen) changed();
  }

  // reread has an execution's approvals read again, soon: a burst of
  // events about it is read once.
  function reread(execution) {
    stale.add(execution);
    clearTimeout(timer);
    timer = setTimeout(() => flush(), 100);
  }

  function draw() {
    const items = [];
    for (const {summary, approvals} of open.values()) for (const a of approvals) items.push({summary, a});
    items.sort((x, y) => (y.a.requestedAt || '').localeCompare(x.a.requestedAt || ''));
    // An item already shown keeps its element, with what was typed in it.
    const kept = new Map();
    for (const li of p.list.children) if (li.dataset.key) kept.set(li.dataset.key, li);
    const want = items.map(({summary, a}) => kept.get(keyOf(summary.id, a)) || item(summary, a));
    p.list.replaceChildren(...want);
    p.empty.hidden = items.length > 0;
    p.count.textContent = items.length ? `${items.length} open` : '';
  }

  function item(summary, a) {
    const key = keyOf(summary.id, a);
    const permission = a.kind === 'permission';
    const result = el('p', {class: 'inbox-result', 'data-part': 'result'});
    const error = el('div', {class: 'error-box', hidden: true});
    const text = el('input', {type: 'text', 'aria-label': `answer to ${a.approvalId}`, placeholder: permission ? 'or say why not' : 'your answer', spellcheck: 'false'});
    const send = (answer) => answerIt(summary.id, a, answer, {result, error, li});
    const choices = a.choices && a.choices.length ? a.choices : permission ? [ALLOW, DENY] : [];
    const form = el('form', {class: 'inbox-answer'}, text, el('button', {type: 'submit'}, permission ? 'Deny with reason' : 'Answer'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (text.value.trim()) send(text.value);
    });
    const self = selfHost();
    const li = el('li', {class: 'inbox-item', 'data-key': key, 'data-execution': summary.id, 'data-approval': a.approvalId, 'data-kind': a.kind},
      el('div', {class: 'inbox-head'},
        badge(permission ? 'permission' : 'question', 'approval'),
        permission && a.tool ? el('code', {class: 'approval-tool'}, a.tool) : null,
        el('a', {href: executionHref(summary.id)}, summary.id),
        el('span', {class: 'muted'}, `agent ${summary.agentId}`),
        summary.host ? el('span', {class: 'muted'}, 'host ', hostTag(summary.host, self)) : null,
        el('time', {datetime: a.requestedAt, title: a.requestedAt}, when(a.requestedAt))),
      el('div', {class: 'inbox-question'}, a.question || '(no question text)'),
      choices.length ? el('div', {class: 'choices'}, choices.map((c) =>
        el('button', {type: 'button', class: 'choice' + (c === DENY ? ' deny' : ''), onclick: () => send(c)}, permission && c === ALLOW ? 'Allow' : permission && c === DENY ? 'Deny' : c))) : null,
      form, error, result);
    if (results.has(key)) result.textContent = results.get(key);
    return li;
  }

  async function answerIt(execution, a, text, {result, error, li}) {
    error.hidden = true;
    for (const b of li.querySelectorAll('button')) b.disabled = true;
    try {
      const ack = await api('POST', execPath(execution, '/messages'), {type: 'answer', payload: {requestId: a.approvalId, text}});
      const said = `Answered "${text}": journaled at sequence ${ack.sequence}, ${ack.delivery}` + (ack.reason ? ` (${ack.reason})` : '');
      results.set(keyOf(execution, a), said);
      result.textContent = said;
      li.dataset.answered = 'true';
      // The request is answered whether or not the execution's state
      // has closed it yet.
      reread(execution);
    } catch (err) {
      error.replaceChildren(describe(err));
      error.hidden = false;
      for (const b of li.querySelectorAll('button')) b.disabled = false;
    }
  }

  const screen = {
    // load reads every open request: the executions that need a person,
    // then the approvals of those with a request open.
    async load() {
      const of = ++gen;
      try {
        const lists = await Promise.all([...NEEDS_OPERATOR].map((a) => listExecutions(new URLSearchParams({attention: a}))));
        if (of !== gen) return;
        open = new Map();
        seen = new Map();
        const asking = [];
        for (const l of lists) for (const s of l.executions) {
          seen.set(s.id, s);
          if (s.currentInputRequestId) asking.push(s);
        }
        await Promise.all(asking.map((s) => readApprovals(s, of)));
        if (of !== gen) return;
        clearError(p.error);
      } catch (err) {
        if (of === gen) showError(p.error, err);
      }
      if (of === gen) changed();
    },

    open() {
      active = true;
      draw();
      screen.load();
    },

    close() {
      active = false;
    },

    // update takes an execution's summary from the live stream, and the
    // kind of the record it is as of: an open request that came, changed
    // or went, or a message (an answer) to an execution with one listed,
    // has its approvals read again.
    update(summary, record) {
      const was = seen.get(summary.id);
      seen.set(summary.id, summary);
      const had = was ? was.currentInputRequestId || '' : '';
      const now = summary.currentInputRequestId || '';
      const listed = open.get(summary.id);
      if (listed) listed.summary = summary;
      if (had === now) {
        if (listed && record === 'message.accepted') reread(summary.id);
        return;
      }
      if (!now) {
        if (open.delete(summary.id)) changed();
        return;
      }
      reread(summary.id);
    },
  };
  return screen;
}
