// The agentjournal operator console: a client of the daemon's API. It
// reads executions, their timelines and journals, sends AgentExecution
// messages, and follows the live event stream. Every error the API answers
// is shown with its message, field and accepted values.
//
// Besides this file it uses three vendored libraries (vendor/README.md):
// xterm.js (window.Terminal) for terminal lanes, marked and DOMPurify for
// agents' Markdown.
'use strict';

(() => {
  // The API token, kept in localStorage: a link to an execution opened in
  // another tab or window of this browser needs no new sign-in. The price:
  // it stays in the browser profile until "Forget token" (or a 401) removes
  // it, readable by any script of this origin (the page's policy admits
  // only the console's own scripts).
  const TOKEN_KEY = 'agentjournal.token';
  // The owner of the last launch, offered for the next one.
  const OWNER_KEY = 'agentjournal.launchOwner';
  const DEFAULT_OWNER = {entity: 'System', id: 'console'};

  // The values the pickers offer. The daemon validates every request and
  // names what it accepts when it refuses one.
  const LIFECYCLES = ['starting', 'running', 'completed', 'failed', 'cancelled', 'terminated'];
  const SESSION_STATUSES = ['active', 'paused', 'waiting-approval', 'completed', 'failed', 'cancelled'];
  const ATTENTIONS = ['none', 'autonomous', 'awaiting-operator', 'awaiting-system', 'blocked'];
  const OWNER_ENTITIES = ['Task', 'Mission', 'Repository', 'Artifact', 'System'];
  const AGENTS = ['generic', 'claude-code', 'codex', 'copilot'];
  const POSTURES = [
    ['', 'structured-headless (default)'],
    ['structured-interactive', 'structured-interactive (with a terminal lane)'],
    ['native-terminal-escape-hatch', 'native-terminal-escape-hatch'],
  ];
  // Attention states that need a person: marked and listed first.
  const NEEDS_OPERATOR = new Set(['awaiting-operator', 'blocked']);
  // Portability labels (spec 003). Terminal-only commands are never
  // offered as messages: they live in the terminal lane.
  const PORTABILITY = {
    'mission-native': 'Mission-native',
    'cross-agent': 'Cross-agent',
    'adapter-scoped': 'Adapter-scoped',
    'terminal-only': 'Terminal-only',
  };
  const EVENT_NAMES = ['data.changed', 'execution.started', 'execution.updated', 'execution.completed',
    'execution.failed', 'execution.cancelled', 'execution.terminated', 'execution.message'];
  const TIMELINE_PAGE = 200;
  const RECORDS_SHOWN = 200;
  // The plain output lines shown: the last ones, followed live.
  const OUTPUT_LINES = 50;
  // How often a running lane is read for the terminal view.
  const TERMINAL_POLL_MS = 500;
  // Lifecycles after which the outcome is shown beside the output.
  const ENDED = new Set(['completed', 'failed', 'cancelled', 'terminated']);
  const FAILED = new Set(['failed', 'terminated']);
  // The agents whose CLI forks or resumes its own session (docs/fork.md);
  // any other gets a retelling of the journal, which a prompt must follow.
  const NATIVE_FORK = new Set(['claude-code']);
  const NATIVE_RESUME = new Set(['claude-code', 'codex', 'copilot']);
  const WORKSPACES = ['keep', 'snapshot', 'discard'];

  const $ = (id) => document.getElementById(id);

  // xterm.js writes its colours and cell sizes into <style> elements. The
  // page's policy admits only those that carry the nonce of this page's
  // response (given on the stylesheet link), and only when it is there
  // before the element is inserted: so every <style> gets it when created.
  const styleNonce = $('styles').nonce;
  if (styleNonce) {
    const create = Document.prototype.createElement;
    Document.prototype.createElement = function createElement(name, options) {
      const e = create.call(this, name, options);
      if (String(name).toLowerCase() === 'style') e.setAttribute('nonce', styleNonce);
      return e;
    };
  }

  // el builds an element: el('td', {class: 'x'}, 'text', child, …).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function fill(select, options) {
    select.replaceChildren(...options.map(([value, label]) => el('option', {value}, label)));
  }

  // ---- the API ----

  let token = '';

  // ApiError is an error answer of the API, in its one shape.
  class ApiError extends Error {
    constructor(status, detail) {
      super(detail.message || `the daemon answered ${status}`);
      this.status = status;
      this.code = detail.code || '';
      this.field = detail.field || '';
      this.accepted = detail.accepted || [];
    }
  }

  async function request(method, path, body, signal) {
    const init = {method, headers: {Authorization: 'Bearer ' + token}, signal};
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, {code: 'unreachable', message: `The daemon did not answer ${method} ${path}: ${e.message}`});
    }
    if (resp.ok) return resp;
    const text = await resp.text();
    let detail = {code: 'http_' + resp.status, message: `${method} ${path} answered ${resp.status} ${resp.statusText}: ${text.trim()}`};
    try {
      const parsed = JSON.parse(text);
      if (parsed && parsed.error) detail = parsed.error;
    } catch (_) { /* not the API's shape: keep the text */ }
    const err = new ApiError(resp.status, detail);
    if (resp.status === 401) unauthorized(err);
    throw err;
  }

  async function api(method, path, body) {
    const resp = await request(method, path, body);
    const text = await resp.text();
    return text ? JSON.parse(text) : null;
  }

  // describe renders an error in words: what was wrong, where, and what is
  // accepted there.
  function describe(err) {
    const box = el('div', {class: 'error'});
    box.append(el('p', {class: 'error-message'}, err.message || String(err)));
    if (err.field) box.append(el('p', {class: 'error-field'}, 'Field: ', el('code', {}, err.field)));
    if (err.accepted && err.accepted.length) {
      box.append(el('p', {class: 'error-accepted'}, 'Accepted: ', err.accepted.map((a, i) => [i ? ', ' : '', el('code', {}, a)])));
    }
    if (err.status) box.append(el('p', {class: 'error-code muted'}, `${err.status} ${err.code}`));
    return box;
  }

  function showError(box, err) {
    box.replaceChildren(describe(err));
    box.hidden = false;
  }

  function clearError(box) {
    box.hidden = true;
    box.replaceChildren();
  }

  // reportError shows an error that belongs to no form in the page-wide
  // list, until the person dismisses it.
  function reportError(what, err) {
    const item = el('div', {class: 'error-box'}, el('p', {class: 'error-what'}, what));
    item.append(describe(err), el('button', {type: 'button', class: 'quiet', onclick: () => item.remove()}, 'Dismiss'));
    $('errors').append(item);
    while ($('errors').children.length > 5) $('errors').firstElementChild.remove();
  }

  // ---- sign-in ----

  function unauthorized(err) {
    localStorage.removeItem(TOKEN_KEY);
    token = '';
    closeEvents();
    showLogin(err);
  }

  function showLogin(err) {
    showView('login-view');
    $('signout').hidden = true;
    if (err) showError($('login-error'), err);
    $('token-input').focus();
  }

  async function signIn(candidate) {
    token = candidate;
    await api('GET', '/v1/executions?limit=1');
    localStorage.setItem(TOKEN_KEY, token);
    clearError($('login-error'));
    $('signout').hidden = false;
    connectEvents();
    route();
  }

  function signedOut() {
    token = '';
    closeEvents();
    detail.close();
    showLogin();
  }

  // tokenFromAddress takes a token from #token=… and removes it from the
  // address, so that it is neither bookmarked nor left on screen.
  function tokenFromAddress() {
    const m = /(?:^#|[#&])token=([^&]+)/.exec(location.hash);
    if (!m) return '';
    history.replaceState(null, '', location.pathname + location.search + '#/');
    return decodeURIComponent(m[1]);
  }

  // ---- live events ----

  let events = null;
  let retry = null;

  function setConn(state, text) {
    $('conn').dataset.state = state;
    $('conn').textContent = text || state;
  }

  function connectEvents() {
    closeEvents();
    events = new EventSource('/v1/events?access_token=' + encodeURIComponent(token));
    events.onopen = () => setConn('live');
    events.onerror = () => {
      if (events.readyState !== EventSource.CLOSED) {
        setConn('reconnecting');
        return;
      }
      // Refused outright: find out why with a call that answers in words.
      setConn('offline');
      api('GET', '/v1/executions?limit=1').then(() => {
        retry = setTimeout(connectEvents, 2000);
      }, (err) => reportError('The live event stream is closed.', err));
    };
    for (const name of EVENT_NAMES) {
      events.addEventListener(name, (ev) => onEvent(name, JSON.parse(ev.data)));
    }
    events.addEventListener('terminal', (ev) => onTerminalEvent(JSON.parse(ev.data)));
    events.addEventListener('overflow', () => setConn('reconnecting', 'catching up'));
  }

  function closeEvents() {
    clearTimeout(retry);
    if (events) events.close();
    events = null;
    setConn('offline');
  }

  function onEvent(name, data) {
    if (name === 'data.changed' && data.state) list.update(data.state);
    if (detail.id && data.executionId === detail.id) detail.changed(name);
    // A new execution may be a fork or a resume in the open one's tree.
    if (detail.id && name === 'execution.started') detail.lineageChanged();
    if (name !== 'data.changed') sessions.changed();
    session.changed(data.executionId, name);
  }

  function onTerminalEvent(data) {
    if (detail.id && data.executionId === detail.id && data.terminal) detail.showTerminal(data.terminal);
  }

  // ---- formatting ----

  function when(iso) {
    if (!iso || iso.startsWith('0001-')) return '—';
    const d = new Date(iso);
    const today = new Date().toDateString() === d.toDateString();
    return today ? d.toLocaleTimeString() : d.toLocaleString();
  }

  function badge(value, kind) {
    return el('span', {class: `badge ${kind}-${value || 'none'}`}, value || '—');
  }

  function setBadge(node, value, kind) {
    node.className = `badge ${kind}-${value || 'none'}`;
    node.textContent = value || '—';
  }

  function dims(dl, rows) {
    dl.replaceChildren(...rows.filter(Boolean).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v === undefined || v === '' ? '—' : v)]));
  }

  // Controls that would hide, restyle or reorder text: shown as escapes.
  const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

  // escaped appends text to a node with its control characters written as
  // escapes (\x1b, \u202e), so that a line reads as what the agent wrote.
  function escaped(node, text) {
    let at = 0;
    for (const m of text.matchAll(CONTROLS)) {
      const c = m[0].charCodeAt(0);
      const esc = c < 0x100 ? '\\x' + c.toString(16).padStart(2, '0') : '\\u' + c.toString(16).padStart(4, '0');
      node.append(text.slice(at, m.index), el('span', {class: 'ctl'}, esc));
      at = m.index + m[0].length;
    }
    node.append(text.slice(at));
    return node;
  }

  // Sanitizing keeps formatting only: no script, event handler,
  // javascript: address, form control or inline style survives.
  const SANITIZE = {
    USE_PROFILES: {html: true},
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option'],
    FORBID_ATTR: ['style'],
  };
  // Links from agents open elsewhere, never in place of the console.
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  });

  // rendered caches sanitized HTML by message text: the timeline is drawn
  // again on every change.
  const rendered = new Map();

  // markdown renders an agent's message: Markdown (marked, GitHub's
  // flavour, a newline a line break) made into sanitized HTML (DOMPurify).
  function markdown(text) {
    text = text || '';
    let html = rendered.get(text);
    if (html === undefined) {
      html = DOMPurify.sanitize(marked.parse(text, {gfm: true, breaks: true, async: false}), SANITIZE);
      if (rendered.size >= 1000) rendered.clear();
      rendered.set(text, html);
    }
    const box = el('div', {class: 'item-text markdown'});
    box.innerHTML = html;
    return box;
  }

  // splitCommand splits a command line as a shell would: blanks separate
  // words, 'single' quotes keep everything, "double" quotes and a bare
  // backslash escape the next character.
  function splitCommand(line) {
    const words = [];
    let word = null;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (c === ' ' || c === '\t' || c === '\n') {
        if (word !== null) words.push(word);
        word = null;
        continue;
      }
      word = word || '';
      if (c === '\\' && i + 1 < line.length) {
        word += line[++i];
      } else if (c === "'") {
        const end = line.indexOf("'", i + 1);
        if (end < 0) throw new Error("the command line has a ' quote that is not closed");
        word += line.slice(i + 1, end);
        i = end;
      } else if (c === '"') {
        let j = i + 1;
        for (; j < line.length && line[j] !== '"'; j++) {
          if (line[j] === '\\' && (line[j + 1] === '"' || line[j + 1] === '\\')) j++;
          word += line[j];
        }
        if (j >= line.length) throw new Error('the command line has a " quote that is not closed');
        i = j;
      } else {
        word += c;
      }
    }
    if (word !== null) words.push(word);
    return words;
  }

  function executionHref(id) {
    return '#/executions/' + encodeURIComponent(id);
  }

  // recordHref opens an execution at one of its records: the timeline item
  // of that sequence, loaded and marked.
  function recordHref(id, seq) {
    return executionHref(id) + '/at/' + seq;
  }

  function sessionHref(id) {
    return '#/sessions/' + encodeURIComponent(id);
  }

  // linkOf is how an execution derives from another, from its state (the
  // header's link): {relation, parent, sequence, history}, or null.
  function linkOf(st) {
    if (!st) return null;
    if (st.forkedFrom) {
      const f = st.forkedFrom;
      return {relation: 'fork', parent: f.agentExecutionId, sequence: f.sequence, history: f.history || ''};
    }
    if (st.resumes) return {relation: 'resume', parent: st.resumes.agentExecutionId, history: st.resumes.history || ''};
    return null;
  }

  // ---- the runtime contract's shapes (spec 004) ----

  // seqLink is a record's sequence, a link to it in its execution's
  // timeline when the execution is known.
  function seqLink(run, seq) {
    if (!seq) return null;
    return run ? el('a', {class: 'seq', href: recordHref(run, seq), title: `record #${seq} of ${run}`}, '#' + seq) : el('span', {class: 'seq'}, '#' + seq);
  }

  function timeOf(iso) {
    return iso ? el('time', {datetime: iso, title: iso}, when(iso)) : null;
  }

  // todoItems lists AgentTodos: each one's text and status, and its status
  // history behind a disclosure whose state open (a Set of todo ids) keeps
  // across redraws. run is the execution whose journal holds the history's
  // sequences, or '' when it is not known.
  function todoItems(todos, run, open) {
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
  function approvalItems(approvals, withRun) {
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

  // ---- search snippets ----

  const ENTITIES = {lt: '<', gt: '>', amp: '&', quot: '"', apos: "'"};

  // unescapeHTML reads the HTML-escaped text of a snippet back into text.
  function unescapeHTML(s) {
    return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name) => {
      if (name[0] !== '#') return ENTITIES[name.toLowerCase()] || whole;
      const n = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : whole;
    });
  }

  // snippetOf draws a search snippet, HTML-escaped text with the matches
  // in <mark>, as text nodes and <mark> elements: nothing in it is parsed
  // as HTML.
  function snippetOf(snippet) {
    const box = el('div', {class: 'snippet'});
    let marked = false;
    for (const part of (snippet || '').split(/(<mark>|<\/mark>)/)) {
      if (part === '<mark>' || part === '</mark>') {
        marked = part === '<mark>';
        continue;
      }
      if (part) box.append(escaped(el(marked ? 'mark' : 'span'), unescapeHTML(part)));
    }
    return box;
  }

  // ---- views ----

  const VIEWS = ['login-view', 'list-view', 'execution-view', 'search-view', 'sessions-view', 'session-view'];

  function showView(id) {
    for (const v of VIEWS) $(v).hidden = v !== id;
  }

  function route() {
    if (!token) {
      showLogin();
      return;
    }
    const h = location.hash;
    const exec = /^#\/executions\/([^/?#]+)(?:\/at\/(\d+))?/.exec(h);
    const one = /^#\/sessions\/([^/?#]+)/.exec(h);
    if (!exec) detail.close();
    if (!one) session.close();
    if (!/^#\/sessions\/?$/.test(h)) sessions.leave();
    list.leave();
    if (exec) {
      detail.open(decodeURIComponent(exec[1]), exec[2] ? Number(exec[2]) : 0);
    } else if (one) {
      session.open(decodeURIComponent(one[1]));
    } else if (/^#\/sessions\/?$/.test(h)) {
      sessions.open();
    } else if (/^#\/search(?:[?]|$)/.test(h)) {
      search.open(new URLSearchParams(h.includes('?') ? h.slice(h.indexOf('?') + 1) : ''));
    } else {
      list.open();
    }
  }

  // ---- the executions ----

  const list = {
    rows: new Map(),
    active: false,
    timer: null,
    // fetching holds the summaries that live events bring while the list
    // is being fetched; the fetched list is older than some of them.
    fetching: null,

    filters() {
      return {owner: $('filter-owner').value.trim(), lifecycle: $('filter-lifecycle').value, attention: $('filter-attention').value};
    },

    async open() {
      showView('list-view');
      this.active = true;
      const f = this.filters();
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
      q.set('limit', '500');
      const fetching = new Map();
      this.fetching = fetching;
      try {
        const data = await api('GET', '/v1/executions?' + q);
        clearError($('list-error'));
        const rows = new Map(data.executions.map((s) => [s.id, s]));
        for (const [id, s] of fetching) {
          const had = rows.get(id);
          if (had && had.lastSequence > s.lastSequence) continue;
          if (this.matches(s)) rows.set(id, s);
          else rows.delete(id);
        }
        this.rows = rows;
      } catch (err) {
        this.rows = new Map();
        showError($('list-error'), err);
      }
      if (this.fetching === fetching) this.fetching = null;
      this.render();
    },

    leave() {
      this.active = false;
    },

    matches(s) {
      const f = this.filters();
      if (f.lifecycle && s.lifecycle !== f.lifecycle) return false;
      if (f.attention && s.attention !== f.attention) return false;
      if (f.owner) {
        const [entity, id] = f.owner.split('/', 2);
        if (s.ownerEntity !== entity || (id && s.ownerId !== id)) return false;
      }
      return true;
    },

    update(summary) {
      if (this.fetching) this.fetching.set(summary.id, summary);
      if (this.matches(summary)) this.rows.set(summary.id, summary);
      else this.rows.delete(summary.id);
      if (!this.active) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.render(), 50);
    },

    render() {
      const rows = [...this.rows.values()].sort((a, b) => {
        const na = NEEDS_OPERATOR.has(a.attention), nb = NEEDS_OPERATOR.has(b.attention);
        if (na !== nb) return na ? -1 : 1;
        return (b.updatedAt || '').localeCompare(a.updatedAt || '') || a.id.localeCompare(b.id);
      });
      $('executions-body').replaceChildren(...rows.map((s) => {
        const needs = NEEDS_OPERATOR.has(s.attention);
        const activity = s.latestActivity && s.latestActivity !== s.activity ? `${s.activity} · ${s.latestActivity}` : s.activity;
        return el('tr', {class: needs ? `needs attn-${s.attention}` : '', 'data-id': s.id, 'data-attention': s.attention},
          el('td', {class: 'mark', title: needs ? 'needs the operator' : ''}, needs ? '!' : ''),
          el('td', {}, el('a', {href: '#/executions/' + encodeURIComponent(s.id)}, s.id)),
          el('td', {}, badge(s.lifecycle, 'lifecycle')),
          el('td', {}, badge(s.attention, 'attention')),
          el('td', {}, activity),
          el('td', {}, `${s.ownerEntity}/${s.ownerId}`),
          el('td', {}, s.agentId),
          el('td', {title: s.createdAt}, when(s.createdAt)),
          el('td', {title: s.updatedAt}, when(s.updatedAt)));
      }));
      $('executions-empty').hidden = rows.length > 0;
    },

    async launch() {
      clearError($('launch-error'));
      for (const f of document.querySelectorAll('#launch-form [aria-invalid]')) f.removeAttribute('aria-invalid');
      const body = {
        ownerEntity: $('launch-owner-entity').value,
        ownerId: $('launch-owner-id').value.trim(),
        agent: $('launch-agent').value,
      };
      try {
        const command = splitCommand($('launch-command').value);
        if (command.length) body.command = command;
      } catch (e) {
        showError($('launch-error'), {message: e.message, field: 'command'});
        return;
      }
      if ($('launch-prompt').value.trim()) body.prompt = $('launch-prompt').value;
      if ($('launch-posture').value) body.posture = $('launch-posture').value;
      $('launch-submit').disabled = true;
      try {
        const res = await api('POST', '/v1/executions', body);
        localStorage.setItem(OWNER_KEY, JSON.stringify({entity: body.ownerEntity, id: body.ownerId}));
        location.hash = '#/executions/' + encodeURIComponent(res.reference.agentExecutionId);
      } catch (err) {
        showError($('launch-error'), err);
        const field = document.querySelector(`#launch-form [data-field="${CSS.escape((err.field || '').split(/[.[]/)[0])}"]`);
        if (field) field.setAttribute('aria-invalid', 'true');
      } finally {
        $('launch-submit').disabled = false;
      }
    },
  };

  // launchDefaults fills the launch form's owner: the last one launched
  // for in this browser, else System/console.
  function launchDefaults() {
    let owner = DEFAULT_OWNER;
    try {
      const kept = JSON.parse(localStorage.getItem(OWNER_KEY) || 'null');
      if (kept && OWNER_ENTITIES.includes(kept.entity) && typeof kept.id === 'string' && kept.id) owner = kept;
    } catch (_) { /* not ours: keep the default */ }
    $('launch-owner-entity').value = owner.entity;
    $('launch-owner-id').value = owner.id;
  }

  // ---- search ----

  const SEARCH_LIMIT = 50;
  // The search form's fields by the query parameter each sets.
  const SEARCH_FIELDS = {q: 'search-q', agent: 'search-agent', lifecycle: 'search-lifecycle', owner: 'search-owner', since: 'search-since'};

  const search = {
    ask: 0, // the newest query asked for; older answers are dropped

    // open shows the search view for the query in the address: its fields
    // filled in, its results read.
    open(params) {
      showView('search-view');
      for (const [k, id] of Object.entries(SEARCH_FIELDS)) $(id).value = params.get(k) || '';
      if (!params.get('q')) {
        this.ask++;
        $('search-results').replaceChildren();
        $('search-info').textContent = '';
        clearError($('search-error'));
        $('search-q').focus();
        return;
      }
      this.run(params);
    },

    // submit puts the form's query in the address, which runs it; the
    // same query again runs again.
    submit() {
      const q = new URLSearchParams();
      for (const [k, id] of Object.entries(SEARCH_FIELDS)) {
        const v = $(id).value.trim();
        if (v) q.set(k, v);
      }
      const hash = '#/search?' + q;
      if (location.hash === hash) this.run(q);
      else location.hash = hash;
    },

    async run(params) {
      const ask = ++this.ask;
      for (const f of document.querySelectorAll('#search-form [aria-invalid]')) f.removeAttribute('aria-invalid');
      const q = new URLSearchParams(params);
      q.set('limit', String(SEARCH_LIMIT));
      $('search-submit').disabled = true;
      try {
        const res = await api('GET', '/v1/search?' + q);
        if (ask !== this.ask) return;
        clearError($('search-error'));
        this.render(res);
      } catch (err) {
        if (ask !== this.ask) return;
        $('search-results').replaceChildren();
        $('search-info').textContent = '';
        showError($('search-error'), err);
        const field = SEARCH_FIELDS[err.field];
        if (field) $(field).setAttribute('aria-invalid', 'true');
      } finally {
        if (ask === this.ask) $('search-submit').disabled = false;
      }
    },

    // render lists the hits, best first: the execution and the record's
    // sequence, a link to that record in its timeline, and the matching
    // text.
    render(res) {
      const hits = res.hits || [];
      $('search-info').textContent = !hits.length ? 'Nothing matches.'
        : res.total > hits.length ? `The best ${hits.length} of ${res.total} matches.` : `${res.total} match${res.total === 1 ? '' : 'es'}.`;
      $('search-results').replaceChildren(...hits.map((h) => el('li', {class: 'hit', 'data-execution': h.executionId, 'data-seq': h.sequence},
        el('div', {class: 'hit-head'},
          el('a', {class: 'hit-link', href: recordHref(h.executionId, h.sequence)}, el('code', {}, h.executionId), ' ', el('span', {class: 'seq'}, '#' + h.sequence)),
          el('span', {class: 'kind'}, h.kind),
          timeOf(h.time)),
        snippetOf(h.snippet))));
    },
  };

  // ---- sessions ----

  // runRelation says how a run derives from another (it resumes it, or
  // was forked from it) and what interrupted it.
  function runRelation(r) {
    const parts = [];
    if (r.resumes) parts.push(['resumes ', el('a', {href: executionHref(r.resumes)}, r.resumes)]);
    if (r.forkedFrom) parts.push(['forked from ', el('a', {href: executionHref(r.forkedFrom)}, r.forkedFrom)]);
    if (r.interruption) parts.push(['interrupted: ', escaped(el('span'), r.interruption)]);
    return parts.map((p, i) => [i ? ' · ' : '', p]);
  }

  // refs shows a list of references, or a dash.
  function refs(list) {
    return list && list.length ? list.map((r, i) => [i ? ', ' : '', el('code', {}, typeof r === 'string' ? r : JSON.stringify(r))]) : '—';
  }

  const sessions = {
    active: false,
    timer: null,
    ask: 0,

    async open() {
      showView('sessions-view');
      this.active = true;
      const ask = ++this.ask;
      try {
        const status = $('sessions-status').value;
        const data = await api('GET', '/v1/sessions' + (status ? '?' + new URLSearchParams({status}) : ''));
        if (ask !== this.ask || !this.active) return;
        clearError($('sessions-error'));
        this.render(data.sessions || []);
      } catch (err) {
        if (ask !== this.ask) return;
        $('sessions-body').replaceChildren();
        showError($('sessions-error'), err);
      }
    },

    leave() {
      this.active = false;
      clearTimeout(this.timer);
    },

    // changed reads the list again after an execution's event: its
    // session's status and runs follow its executions.
    changed() {
      if (!this.active) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.open(), 300);
    },

    render(list) {
      $('sessions-body').replaceChildren(...list.map((ss) => el('tr', {'data-id': ss.sessionId, 'data-status': ss.status},
        el('td', {}, el('a', {href: sessionHref(ss.sessionId)}, ss.sessionId)),
        el('td', {}, badge(ss.status, 'session')),
        el('td', {}, ss.agentId || '—'),
        el('td', {}, ss.productId || '—'),
        el('td', {}, ss.userId || '—'),
        el('td', {}, String((ss.runIds || []).length)),
        el('td', {}, ss.resumable ? 'yes' : 'no'),
        el('td', {title: ss.startedAt}, when(ss.startedAt)),
        el('td', {title: ss.updatedAt}, when(ss.updatedAt)))));
      $('sessions-empty').hidden = list.length > 0;
    },
  };

  // session is one session's view: its runs in order, each opening its
  // execution, and its todos, approvals and checkpoints.
  const session = {
    id: '',
    data: null,
    timer: null,
    ask: 0,
    openTodos: new Set(),

    async open(id) {
      if (id !== this.id) {
        this.close();
        this.id = id;
        this.openTodos = new Set();
        for (const b of ['session-runs', 'session-tasks', 'session-todos', 'session-approvals', 'session-checkpoints', 'session-dims']) $(b).replaceChildren();
        clearError($('session-error'));
      }
      showView('session-view');
      $('session-id').textContent = id;
      await this.load();
    },

    close() {
      this.id = '';
      this.data = null;
      this.ask++;
      clearTimeout(this.timer);
    },

    // changed reads the session again after an event about one of its runs,
    // or a new execution, which may be its next run.
    changed(executionId, name) {
      if (!this.id) return;
      const runs = (this.data && this.data.session && this.data.session.runIds) || [];
      if (name !== 'execution.started' && !runs.includes(executionId)) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.load(), 200);
    },

    async load() {
      const id = this.id;
      const ask = ++this.ask;
      try {
        const data = await api('GET', `/v1/sessions/${encodeURIComponent(id)}`);
        if (ask !== this.ask || id !== this.id) return;
        clearError($('session-error'));
        this.data = data;
        this.render();
      } catch (err) {
        if (ask === this.ask && id === this.id) showError($('session-error'), err);
      }
    },

    render() {
      const d = this.data;
      const ss = d.session || {};
      setBadge($('session-status'), ss.status, 'session');
      setBadge($('session-resumable'), ss.resumable ? 'resumable' : 'not resumable', 'resumable');
      $('session-meta').textContent = [ss.agentId && `agent ${ss.agentId}`, ss.productId && `product ${ss.productId}`, ss.userId && `user ${ss.userId}`]
        .filter(Boolean).join(' · ');
      const runs = d.runs || [];
      $('session-runs').replaceChildren(...(runs.length ? runs.map((r) => el('li', {class: 'run', 'data-run': r.runId, 'data-status': r.status},
        el('div', {class: 'contract-head'},
          el('a', {href: executionHref(r.runId)}, el('code', {}, r.runId)),
          badge(r.status, 'run'),
          r.lifecycle && r.lifecycle !== r.status && badge(r.lifecycle, 'lifecycle'),
          NEEDS_OPERATOR.has(r.attention) && badge(r.attention, 'attention'),
          r.runId && ss.currentTaskId && r.taskId === ss.currentTaskId && el('span', {class: 'muted small'}, 'current task')),
        el('div', {class: 'item-detail muted'},
          r.agentId ? `agent ${r.agentId} · ` : '', r.taskId ? ['task ', el('code', {}, r.taskId), ' · '] : '',
          'started ', timeOf(r.startedAt), r.endedAt ? [' · ended ', timeOf(r.endedAt)] : ''),
        runRelation(r).length ? el('div', {class: 'item-detail'}, runRelation(r)) : null))
        : [el('li', {class: 'muted empty'}, 'No runs.')]));
      const tasks = d.tasks || [];
      $('session-tasks').replaceChildren(...(tasks.length ? tasks.map((tk) => el('li', {class: 'task', 'data-task': tk.taskId, 'data-status': tk.status},
        el('div', {class: 'contract-head'}, badge(tk.status, 'task'), escaped(el('span', {class: 'task-title'}), tk.title || tk.taskId)),
        el('div', {class: 'item-detail muted'}, 'runs ', (tk.runIds || []).map((r, i) => [i ? ', ' : '', el('a', {href: executionHref(r)}, r)]))))
        : [el('li', {class: 'muted empty'}, 'No tasks.')]));
      const single = runs.length === 1 ? runs[0].runId : '';
      $('session-todos').replaceChildren(...todoItems(d.todos || [], single, this.openTodos));
      $('session-approvals').replaceChildren(...approvalItems(d.approvals || [], true));
      const cps = d.checkpoints || [];
      $('session-checkpoints').replaceChildren(...(cps.length ? cps.map((c) => {
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
      }) : [el('li', {class: 'muted empty'}, 'No checkpoints.')]));
      dims($('session-dims'), [
        ['Session', el('code', {}, ss.sessionId || this.id)],
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

  // ---- one execution ----

  const detail = {
    id: '',
    state: null, // the live view: projected state + live overlay
    items: new Map(), // timeline items by sequence
    older: null, // the before cursor of the next older page
    tt: null, // time travel: {seq, data: {toSeq, state, records}} or null
    ttAsk: 0, // the newest replay asked for; older answers are dropped
    liveRecords: null,
    refreshTimer: null,
    refreshing: false,
    again: false,
    pollTimer: null,
    terminal: null,
    player: null,
    recView: null, // the recording's terminal view
    view: null, // the terminal view (TermView), made when first shown
    keys: '', // keys typed in the view, not yet sent
    sendingKeys: false,
    output: [], // the last plain output lines
    outputFollow: null, // the AbortController of the follow stream
    outputDone: false, // output holds every line of an ended execution
    inherited: null, // a fork's items from its parents' prefix, once read
    lineage: null, // {data: the lineage route's answer, links: Map id → linkOf}
    lineageAsk: 0, // the newest lineage read asked for
    lineageTimer: null,
    forking: null, // the item the fork form is open on: {executionId, sequence, key}
    target: 0, // the sequence of the record the address opens the view at, or 0
    openTodos: new Set(), // the todos whose history is shown
    contractAsk: 0, // the newest run, todos and approvals read asked for

    async open(id, at) {
      const fresh = this.id !== id;
      if (fresh) {
        this.close();
        this.id = id;
        this.items = new Map();
        this.older = null;
        $('timeline').replaceChildren();
        $('tt-records').replaceChildren();
        if (this.view) this.view.clear();
        $('rec-screen').hidden = true;
        $('rec-info').textContent = '';
        $('output-lines').replaceChildren();
        $('output-card').hidden = true;
        for (const b of ['prompt-error', 'answer-error', 'exec-error', 'terminal-error', 'output-error']) clearError($(b));
        $('prompt-result').textContent = '';
        $('answer-result').textContent = '';
        this.inherited = null;
        this.lineage = null;
        $('lineage-card').hidden = true;
        $('lineage-tree').replaceChildren();
        clearError($('lineage-error'));
        $('exec-link').hidden = true;
        $('resume-card').hidden = true;
        $('resume-prompt').value = '';
        clearError($('resume-error'));
        this.closeFork(false);
        this.openTodos = new Set();
        $('exec-session').hidden = true;
        for (const b of ['todos', 'approvals']) {
          $(b + '-list').replaceChildren();
          $(b + '-count').textContent = '';
          clearError($(b + '-error'));
        }
      }
      this.target = at || 0;
      showView('execution-view');
      $('exec-id').textContent = id;
      await this.refresh();
      if (fresh && id === this.id) this.loadLineage();
      if (!fresh && id === this.id && this.state) this.renderTimeline(this.shown().items, !this.tt);
      if (this.target && id === this.id) this.reveal(this.target);
    },

    // reveal brings the timeline item of a record into view, marked:
    // older pages are read until it is loaded. A record with no item of
    // its own is shown by the first item after it.
    async reveal(seq) {
      const id = this.id;
      const loaded = () => [...this.items.keys()].some((s) => s <= seq);
      while (id === this.id && this.target === seq && this.older !== null && !loaded()) {
        const before = this.older;
        await this.loadOlder();
        if (this.older === before) return;
      }
      if (id !== this.id || this.target !== seq) return;
      const li = $('timeline').querySelector('li.item[data-target]');
      if (li) li.scrollIntoView({block: 'center'});
    },

    // targetSeq is the sequence of the item that stands for the record the
    // view was opened at: its own, else the first one after it.
    targetSeq() {
      if (!this.target || this.tt) return 0;
      let best = 0;
      for (const s of this.items.keys()) if (s >= this.target && (!best || s < best)) best = s;
      return best;
    },

    // loadContract reads the execution as the runtime contract shows it:
    // its run (status and session), todos and approval checkpoints. Each
    // event about the execution reads them again.
    async loadContract() {
      const id = this.id;
      const ask = ++this.contractAsk;
      const enc = encodeURIComponent(id);
      const [run, todos, approvals] = await Promise.all([
        api('GET', `/v1/executions/${enc}/run`).catch((err) => err),
        api('GET', `/v1/executions/${enc}/todos`).catch((err) => err),
        api('GET', `/v1/executions/${enc}/approvals`).catch((err) => err),
      ]);
      if (ask !== this.contractAsk || id !== this.id) return;
      if (run instanceof Error) {
        showError($('exec-error'), run);
      } else {
        const sid = run.sessionId || id;
        $('exec-session').replaceChildren('Session ', el('a', {href: sessionHref(sid), 'data-id': sid}, sid),
          ' · run ', badge(run.status, 'run'));
        $('exec-session').hidden = false;
      }
      if (todos instanceof Error) {
        showError($('todos-error'), todos);
      } else {
        clearError($('todos-error'));
        const list = todos.todos || [];
        const done = list.filter((t) => t.status === 'done').length;
        $('todos-count').textContent = list.length ? `${done} of ${list.length} done` : '';
        $('todos-list').replaceChildren(...todoItems(list, id, this.openTodos));
      }
      if (approvals instanceof Error) {
        showError($('approvals-error'), approvals);
      } else {
        clearError($('approvals-error'));
        const list = approvals.approvals || [];
        const pending = list.filter((a) => a.status === 'pending').length;
        $('approvals-count').textContent = pending ? `${pending} pending` : '';
        $('approvals-list').replaceChildren(...approvalItems(list));
      }
    },

    close() {
      this.id = '';
      this.target = 0;
      this.contractAsk++;
      this.state = null;
      this.tt = null;
      this.terminal = null;
      this.liveRecords = null;
      clearTimeout(this.refreshTimer);
      clearTimeout(this.lineageTimer);
      this.lineageAsk++;
      clearInterval(this.pollTimer);
      this.pollTimer = null;
      if (this.player) this.player.stop();
      this.player = null;
      this.keys = '';
      if (this.outputFollow) this.outputFollow.abort();
      this.outputFollow = null;
      this.output = [];
      this.outputDone = false;
    },

    // changed schedules a refresh after an event about this execution.
    changed() {
      clearTimeout(this.refreshTimer);
      this.refreshTimer = setTimeout(() => this.refresh(), 100);
    },

    async refresh() {
      if (this.refreshing) {
        this.again = true;
        return;
      }
      this.refreshing = true;
      const id = this.id;
      try {
        const enc = encodeURIComponent(id);
        const [state, page] = await Promise.all([
          api('GET', `/v1/executions/${enc}`),
          api('GET', `/v1/executions/${enc}/timeline?limit=${TIMELINE_PAGE}`),
        ]);
        if (id !== this.id) return;
        clearError($('exec-error'));
        this.state = state;
        if (state.forkedFrom && this.inherited === null) this.loadInherited();
        for (const it of page.items) this.items.set(it.sequence, it);
        if (this.older === null && page.next !== null) this.older = page.next;
        this.render();
        this.loadContract();
        this.watchTerminal();
        this.watchOutput();
        if ($('tt-records-box').open && !this.tt) this.loadLiveRecords();
      } catch (err) {
        if (id === this.id) showError($('exec-error'), err);
      } finally {
        this.refreshing = false;
        if (this.again) {
          this.again = false;
          this.changed();
        }
      }
    },

    async loadOlder() {
      if (this.older === null) return;
      const id = this.id;
      try {
        const page = await api('GET', `/v1/executions/${encodeURIComponent(id)}/timeline?limit=${TIMELINE_PAGE}&before=${this.older}`);
        if (id !== this.id) return;
        for (const it of page.items) this.items.set(it.sequence, it);
        this.older = page.next;
        this.renderTimeline(this.shown().items, false);
      } catch (err) {
        showError($('exec-error'), err);
      }
    },

    // shown is what the view shows: the live state, or the replayed one.
    // A fork's inherited items come first, once its own are all loaded.
    shown() {
      if (this.tt) return {state: this.tt.data.state, items: this.tt.data.state.timeline || [], live: false};
      const own = [...this.items.values()].sort((a, b) => a.sequence - b.sequence);
      const inherited = this.older === null && this.inherited ? this.inherited : [];
      return {state: this.state, items: inherited.concat(own), live: true};
    },

    // loadInherited reads a fork's inherited items: the timeline route
    // pages a fork's own items only, and the replay folds the parents'
    // prefix in at the fork's header. The prefix never changes.
    async loadInherited() {
      const id = this.id;
      this.inherited = [];
      try {
        const data = await api('GET', `/v1/executions/${encodeURIComponent(id)}/replay?toSeq=1&limit=0`);
        if (id !== this.id) return;
        this.inherited = (data.state.timeline || []).filter((it) => it.inherited);
        this.render();
      } catch (err) {
        if (id !== this.id) return;
        this.inherited = null;
        showError($('exec-error'), err);
      }
    },

    render() {
      if (!this.state) return;
      const {state, items, live} = this.shown();
      const last = this.state.journal.lastSequence;
      setBadge($('exec-lifecycle'), state.lifecycle, 'lifecycle');
      setBadge($('exec-attention'), state.attention, 'attention');
      setBadge($('exec-activity'), state.activity, 'activity');
      const running = this.state.live && this.state.live.running;
      $('exec-running').textContent = running ? 'process running' : 'no process here';
      $('exec-running').className = 'badge ' + (running ? 'running-yes' : 'running-no');
      $('exec-owner').textContent = `${state.ownerEntity}/${state.ownerId} · agent ${state.agentId} · ${state.posture || 'structured-headless'}`;
      $('exec-stop').hidden = !running;
      this.renderLink();
      this.renderResume(running);

      $('tt-banner').hidden = live;
      $('tt-banner-seq').textContent = live ? '' : String(this.tt.seq);
      $('tt-banner-last').textContent = String(last);
      document.body.classList.toggle('time-travel', !live);

      this.renderTimeline(items, live);
      this.renderAnswer();
      this.renderBlocked(state);
      this.renderOutput();
      this.renderPrompt();
      this.renderStatus(state, live);
      this.renderLatest(state);
      this.renderJournal(state);
      this.renderTimeTravel();
    },

    renderTimeline(items, live) {
      const box = $('timeline-box');
      const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
      const open = live ? this.state.currentInputRequestId : '';
      // The fork form lives in its item: drawing the items again moves it
      // to the new one, keeping what was typed and where the focus was.
      const form = $('fork-form');
      const focused = form.contains(document.activeElement) ? document.activeElement : null;
      const caret = focused && focused.tagName === 'INPUT' ? [focused.selectionStart, focused.selectionEnd] : null;
      const target = this.targetSeq();
      $('timeline').replaceChildren(...items.map((it) => {
        const meta = [];
        if (it.source) meta.push(it.source);
        if (it.messageType) meta.push('type ' + it.messageType);
        if (it.requestId) meta.push('request ' + it.requestId);
        if (it.action) meta.push(it.action);
        if (it.messageId) meta.push(it.messageId);
        const label = it.kind === 'needs-input' && it.requestId === open && open ? 'open' : '';
        // An inherited item is its parent's record: a fork from it
        // branches off that execution, after that sequence.
        const holder = it.inherited && it.executionId ? it.executionId : this.id;
        const key = `${holder}:${it.sequence}:${it.id}`;
        const targeted = !it.inherited && it.sequence === target;
        return el('li', {class: `item kind-${it.kind}` + (it.source === 'operator' ? ' from-operator' : '') + (it.inherited ? ' inherited' : '') + (targeted ? ' target' : ''),
          'data-seq': it.sequence, 'data-kind': it.kind, 'data-execution': holder, 'data-key': key, 'data-target': targeted ? this.target : null},
          el('div', {class: 'item-head'},
            el('span', {class: 'seq'}, '#' + it.sequence),
            el('span', {class: 'kind'}, it.kind.replace(/-/g, ' ')),
            label && el('span', {class: 'badge attention-awaiting-operator'}, label),
            it.inherited && el('a', {class: 'from', href: executionHref(holder), title: 'inherited from the parent\'s prefix'}, 'from ' + holder),
            el('time', {datetime: it.at, title: it.at}, when(it.at)),
            el('button', {type: 'button', class: 'fork-here quiet', title: `Fork a new execution after record #${it.sequence} of ${holder}`,
              'aria-label': `Fork here: after record #${it.sequence} of ${holder}`, 'aria-expanded': this.forking && this.forking.key === key ? 'true' : 'false',
              onclick: () => this.openFork(holder, it.sequence, key)}, 'Fork here')),
          it.kind === 'chat' ? markdown(it.text) : el('div', {class: 'item-text'}, it.text),
          detailOf('Reason', it.reason !== it.text && it.reason),
          detailOf('Needs', it.needs),
          this.choicesOf(it, label === 'open' && this.canAnswer()),
          meta.length ? el('div', {class: 'item-meta muted'}, meta.join(' · ')) : null);
      }));
      $('timeline-older').hidden = !live || this.older === null;
      if (!items.length) $('timeline').append(el('li', {class: 'muted'}, 'No timeline items yet.'));
      this.placeFork();
      if (focused && form.contains(focused)) {
        focused.focus({preventScroll: true});
        if (caret) focused.setSelectionRange(...caret);
      }
      if (!this.forking && !target && (atBottom || !live)) box.scrollTop = box.scrollHeight;
    },

    // ---- fork here ----

    // openFork opens the fork form on a timeline item: a fork of execution
    // after its record at sequence.
    openFork(executionId, sequence, key) {
      if (this.forking && this.forking.key === key) {
        this.closeFork(true);
        return;
      }
      this.forking = {executionId, sequence, key};
      $('fork-target').textContent = `A new execution that branches off ${executionId} after record #${sequence}.`;
      $('fork-workspace').value = 'keep';
      $('fork-prompt').value = '';
      for (const f of document.querySelectorAll('#fork-form [aria-invalid]')) f.removeAttribute('aria-invalid');
      clearError($('fork-error'));
      const agent = this.state ? this.state.agentId : '';
      const native = NATIVE_FORK.has(agent);
      $('fork-prompt').placeholder = native ? 'optional: sent after the forked session' : 'required: it follows the retelling';
      $('fork-note').textContent = native
        ? `${agent} forks its own session at the point; with no assistant message before it, the history is retold and a prompt is needed.`
        : `${agent || 'This agent'} cannot fork its session: the new one gets the conversation up to the point retold from the journal, then this prompt.`;
      this.renderTimeline(this.shown().items, !this.tt);
      $('fork-prompt').focus();
    },

    // closeFork closes the fork form; back gives the focus to the item's
    // button, as a keyboard user left it.
    closeFork(back) {
      const was = this.forking;
      this.forking = null;
      const form = $('fork-form');
      form.hidden = true;
      $('timeline-box').after(form);
      if (!was) return;
      const li = this.forkItem(was.key);
      const button = li && li.querySelector('.fork-here');
      if (button) button.setAttribute('aria-expanded', 'false');
      if (back && button) button.focus();
    },

    forkItem(key) {
      return [...$('timeline').children].find((li) => li.dataset.key === key) || null;
    },

    // placeFork puts the open fork form in its item, or closes it when the
    // item is no longer shown (time travel to before it).
    placeFork() {
      if (!this.forking) return;
      const li = this.forkItem(this.forking.key);
      if (!li) {
        this.closeFork(false);
        return;
      }
      li.append($('fork-form'));
      $('fork-form').hidden = false;
    },

    async submitFork() {
      const f = this.forking;
      if (!f) return;
      clearError($('fork-error'));
      for (const c of document.querySelectorAll('#fork-form [aria-invalid]')) c.removeAttribute('aria-invalid');
      const body = {at: f.sequence, workspace: $('fork-workspace').value};
      if ($('fork-prompt').value.trim()) body.prompt = $('fork-prompt').value;
      $('fork-submit').disabled = true;
      try {
        const res = await api('POST', `/v1/executions/${encodeURIComponent(f.executionId)}/fork`, body);
        if (this.forking === f) this.closeFork(false);
        location.hash = executionHref(res.reference.agentExecutionId);
      } catch (err) {
        if (this.forking !== f) return;
        showError($('fork-error'), err);
        const field = {workspace: 'fork-workspace', prompt: 'fork-prompt'}[err.field];
        if (field) $(field).setAttribute('aria-invalid', 'true');
      } finally {
        $('fork-submit').disabled = false;
      }
    },

    // ---- lineage ----

    // renderLink shows, in the head, the execution this one was forked
    // from or resumes.
    renderLink() {
      const l = linkOf(this.state);
      $('exec-link').hidden = !l;
      if (!l) return;
      $('exec-link').replaceChildren(
        l.relation === 'fork' ? 'Forked from ' : 'Resumes ',
        el('a', {href: executionHref(l.parent), 'data-id': l.parent}, l.parent),
        l.relation === 'fork' ? el('span', {class: 'at'}, ` at #${l.sequence}`) : '',
        l.history ? ` · history ${l.history}` : '');
    },

    lineageChanged() {
      clearTimeout(this.lineageTimer);
      this.lineageTimer = setTimeout(() => this.loadLineage(), 300);
    },

    // loadLineage reads the execution's fork tree, and the link of each
    // execution between it and the root: how each derives from the one
    // above, with its history, is in its own header.
    async loadLineage() {
      const id = this.id;
      const ask = ++this.lineageAsk;
      try {
        const lin = await api('GET', `/v1/executions/${encodeURIComponent(id)}/lineage`);
        const between = lin.ancestors.slice(0, -1).map((s) => s.executionId);
        const states = await Promise.all(between.map((a) => api('GET', `/v1/executions/${encodeURIComponent(a)}`).catch(() => null)));
        if (ask !== this.lineageAsk || id !== this.id) return;
        const links = new Map();
        states.forEach((st, i) => links.set(between[i], linkOf(st)));
        this.lineage = {data: lin, links};
        clearError($('lineage-error'));
        this.renderLineage();
      } catch (err) {
        if (ask !== this.lineageAsk || id !== this.id) return;
        $('lineage-card').hidden = false;
        showError($('lineage-error'), err);
      }
    },

    // renderLineage draws the fork tree from the root: the ancestors down
    // to this execution, marked, and the forks and resumes below it; an
    // execution that derives from none and has none is left without it.
    renderLineage() {
      const lin = this.lineage && this.lineage.data;
      if (!lin || !lin.tree) return;
      const links = this.lineage.links;
      links.set(lin.executionId, linkOf(this.state));
      const above = new Set(lin.ancestors.map((s) => s.executionId));
      const node = (n, below) => {
        const role = n.current ? 'current' : above.has(n.executionId) ? 'ancestor' : below ? 'descendant' : 'branch';
        const l = links.get(n.executionId);
        let how = '';
        if (n.relation === 'fork') how = `forked at #${n.sequence}`;
        else if (n.relation === 'resume') how = 'resumed';
        if (how && l && l.history) how += ` · history ${l.history}`;
        return el('li', {class: `lin-node lin-${role}`, 'data-id': n.executionId, 'data-role': role},
          el('div', {class: 'lin-entry'},
            el('a', {href: executionHref(n.executionId), 'aria-current': n.current ? 'page' : null}, n.executionId),
            how && el('span', {class: 'lin-how muted'}, how),
            n.current && el('span', {class: 'badge lin-here'}, 'this execution'),
            role === 'ancestor' && el('span', {class: 'lin-role muted'}, n.executionId === lin.root ? 'root' : 'ancestor')),
          n.children.length ? el('ul', {}, n.children.map((c) => node(c, below || n.current))) : null);
      };
      $('lineage-tree').replaceChildren(node(lin.tree, false));
      $('lineage-card').dataset.execution = lin.executionId;
      const alone = !lin.ancestors.length && !lin.tree.children.length;
      $('lineage-card').hidden = alone && $('lineage-error').hidden;
    },

    // ---- resume ----

    // renderResume offers a resume of an execution that has ended.
    renderResume(running) {
      const st = this.state;
      const show = ENDED.has(st.lifecycle) && !running;
      $('resume-card').hidden = !show;
      if (!show) return;
      const native = NATIVE_RESUME.has(st.agentId);
      $('resume-note').textContent = native
        ? `A new run of this execution's session: ${st.agentId} resumes it itself. The prompt is optional.`
        : `A new run of this execution's session: ${st.agentId} cannot resume it, so it is retold from the journal and a prompt must follow.`;
      $('resume-prompt').placeholder = native ? 'optional' : 'required: it follows the retelling';
    },

    async submitResume() {
      const id = this.id;
      clearError($('resume-error'));
      const body = {};
      if ($('resume-prompt').value.trim()) body.prompt = $('resume-prompt').value;
      $('resume-submit').disabled = true;
      try {
        const res = await api('POST', `/v1/executions/${encodeURIComponent(id)}/resume`, body);
        if (id === this.id) $('resume-prompt').value = '';
        location.hash = executionHref(res.reference.agentExecutionId);
      } catch (err) {
        if (id === this.id) showError($('resume-error'), err);
      } finally {
        $('resume-submit').disabled = false;
      }
    },

    // choicesOf shows a question's choices: buttons that answer with one
    // while the request is open, else the list.
    choicesOf(it, open) {
      if (!it.choices || !it.choices.length) return null;
      if (!open) return el('div', {class: 'item-detail muted'}, 'Choices: ' + it.choices.join(' / '));
      return el('div', {class: 'choices'}, it.choices.map((c) =>
        el('button', {type: 'button', class: 'choice', onclick: () => this.answer(c, it.requestId)}, c)));
    },

    descriptors() {
      const pd = this.state && this.state.protocolDescriptor;
      return (pd && pd.messages) || [];
    },

    // canAnswer reports whether the live execution can take an answer now.
    canAnswer() {
      const st = this.state;
      return !!st && st.lifecycle === 'running' && this.descriptors().some((m) => m.type === 'answer');
    },

    renderAnswer() {
      const st = this.state;
      const req = st.currentInputRequestId;
      const show = !!req && this.canAnswer();
      $('answer-card').hidden = !show;
      if (!show) return;
      if ($('answer-request').textContent !== req) {
        $('answer-text').value = '';
        $('answer-result').textContent = '';
        clearError($('answer-error'));
      }
      $('answer-request').textContent = req;
      const lir = st.lastInputRequest || {};
      $('answer-question').textContent = st.currentInputQuestion || (lir.requestId === req ? lir.question : '') || '(no question text)';
      const choices = lir.requestId === req && lir.choices ? lir.choices : [];
      $('answer-choices').replaceChildren(...choices.map((c) => el('button', {type: 'button', class: 'choice', onclick: () => this.answer(c, req)}, c)));
    },

    // answer sends an answer message to an input request.
    async answer(text, req) {
      clearError($('answer-error'));
      $('answer-send').disabled = true;
      try {
        const ack = await api('POST', `/v1/executions/${encodeURIComponent(this.id)}/messages`,
          {type: 'answer', payload: {requestId: req, text}});
        $('answer-text').value = '';
        $('answer-result').textContent = `Answer ${ack.messageId} to ${req} journaled at sequence ${ack.sequence}: ${ack.delivery}` +
          (ack.reason ? ` (${ack.reason})` : '');
      } catch (err) {
        showError($('answer-error'), err);
      } finally {
        $('answer-send').disabled = false;
      }
    },

    renderPrompt() {
      const sel = $('prompt-type');
      const offered = this.descriptors().filter((m) => m.type !== 'answer' && m.portability !== 'terminal-only');
      const key = offered.map((m) => m.type).join(',');
      if (sel.dataset.key !== key) {
        const previous = sel.value;
        const groups = new Map();
        for (const m of offered) {
          if (!groups.has(m.portability)) groups.set(m.portability, []);
          groups.get(m.portability).push(m);
        }
        sel.replaceChildren(...[...groups].map(([p, ms]) => el('optgroup', {label: PORTABILITY[p] || p},
          ms.map((m) => el('option', {value: m.type}, `${m.label} — ${portability(m)}`)))));
        if (offered.some((m) => m.type === previous)) sel.value = previous;
        sel.dataset.key = key;
      }
      $('prompt-send').disabled = offered.length === 0;
      this.describePrompt();
    },

    // promptMessage is what the prompt box would send: a leading / makes
    // it a slash command the daemon resolves, otherwise a message of the
    // selected descriptor.
    promptMessage() {
      const raw = $('prompt-text').value;
      const m = /^\/([A-Za-z0-9_.:-]+)(?:\s+([\s\S]*))?$/.exec(raw.trim());
      if (m || raw.trim().startsWith('/')) return {type: m ? m[1] : '', text: m ? m[2] || '' : '', slash: true};
      return {type: $('prompt-type').value, text: raw, slash: false};
    },

    describePrompt() {
      const {type, slash} = this.promptMessage();
      const d = slash ? null : this.descriptors().find((m) => m.type === type);
      const tag = $('prompt-portability');
      if (d) {
        tag.hidden = false;
        tag.className = `badge portability-${d.portability}`;
        tag.textContent = portability(d);
        $('prompt-delivery').textContent = `delivery ${d.delivery}` + (d.mutatesContext ? ' · changes the context' : '');
        $('prompt-desc').textContent = d.description || '';
      } else {
        tag.hidden = true;
        $('prompt-delivery').textContent = '';
        $('prompt-desc').textContent = '';
      }
      // A slash command is the daemon's to resolve: the box asks for its
      // completions and a preview of the typed invocation (a dry run).
      clearTimeout(this.commandTimer);
      if (!slash) {
        this.commandSeq = (this.commandSeq || 0) + 1;
        $('prompt-completions').replaceChildren();
        $('prompt-completions').hidden = true;
        $('prompt-preview').textContent = '';
        $('prompt-preview').className = 'muted';
        return;
      }
      this.commandTimer = setTimeout(() => this.previewCommand(), 120);
    },

    // previewCommand asks the daemon for the completions of the command
    // name typed so far and for the invocation the whole text would be.
    async previewCommand() {
      const raw = $('prompt-text').value.trim();
      const seq = this.commandSeq = (this.commandSeq || 0) + 1;
      const base = `/v1/executions/${encodeURIComponent(this.id)}/commands`;
      const name = raw.split(/\s/, 1)[0];
      const typingName = !/\s/.test(raw);
      try {
        const [list, preview] = await Promise.all([
          typingName ? api('GET', `${base}?prefix=${encodeURIComponent(name)}`) : Promise.resolve(null),
          api('POST', `${base}?dryRun=true`, {text: raw}).then((v) => ({ok: v}), (err) => ({err})),
        ]);
        if (seq !== this.commandSeq) return; // typed on since
        this.renderCompletions(list ? list.completions : []);
        const box = $('prompt-preview');
        if (preview.err) {
          box.className = 'muted preview-error';
          box.textContent = preview.err.message || String(preview.err);
          return;
        }
        const inv = preview.ok.invocation;
        box.className = 'muted preview-ok';
        box.replaceChildren(
          el('span', {class: `badge category-${inv.category}`}, inv.category), ' ',
          el('span', {class: `badge portability-${inv.portability}`}, portability(inv)), ' ',
          `${inv.operation}` + (inv.messageType ? ` (${inv.messageType} message)` : '') +
          (inv.records === 'none' ? ' · terminal input, not journaled' : ` · records ${inv.records}`));
      } catch (err) {
        if (seq !== this.commandSeq) return;
        $('prompt-preview').className = 'muted preview-error';
        $('prompt-preview').textContent = err.message || String(err);
      }
    },

    // renderCompletions lists the commands offered, grouped by portability
    // so adapter-scoped ones stand apart; a click fills the command in.
    renderCompletions(cs) {
      const box = $('prompt-completions');
      box.hidden = cs.length === 0;
      const groups = new Map();
      for (const c of cs) {
        const key = portability(c);
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(c);
      }
      box.replaceChildren(...[...groups].map(([label, items]) => el('li', {class: 'completion-group'},
        el('span', {class: 'completion-group-label muted small'}, label),
        el('ul', {}, items.map((c) => el('li', {
          class: `completion portability-row-${c.portability}`, 'data-command': c.command, 'data-category': c.category,
          'data-portability': c.portability, title: c.description || '',
          onclick: () => {
            $('prompt-text').value = `/${c.command} `;
            $('prompt-text').focus();
            this.describePrompt();
          },
        }, el('code', {}, c.inputShape), ' ',
        el('span', {class: `badge category-${c.category}`}, c.category), ' ',
        el('span', {class: `badge portability-${c.portability}`}, portability(c)), ' ',
        el('span', {class: 'muted small'}, c.description || '')))))));
    },

    async sendPrompt() {
      const {type, text, slash} = this.promptMessage();
      clearError($('prompt-error'));
      $('prompt-result').textContent = '';
      $('prompt-send').disabled = true;
      try {
        if (slash) {
          const res = await api('POST', `/v1/executions/${encodeURIComponent(this.id)}/commands`, {text: $('prompt-text').value.trim()});
          const inv = res.invocation;
          $('prompt-text').value = '';
          this.describePrompt();
          $('prompt-result').textContent = `${inv.category} ${inv.operation}: ${res.result.summary}` +
            (res.result.sequence ? ` (journaled at sequence ${res.result.sequence})` : '');
          return;
        }
        const body = {type};
        if (text.trim()) body.payload = {text};
        const ack = await api('POST', `/v1/executions/${encodeURIComponent(this.id)}/messages`, body);
        $('prompt-text').value = '';
        this.describePrompt();
        $('prompt-result').textContent = `${type} message ${ack.messageId} journaled at sequence ${ack.sequence}: ` +
          `${ack.delivery} via ${ack.transport}` + (ack.reason ? ` (${ack.reason})` : '') + (ack.duplicate ? ' (sent before)' : '');
      } catch (err) {
        showError($('prompt-error'), err);
      } finally {
        $('prompt-send').disabled = false;
      }
    },

    // renderBlocked shows why the agent is blocked and what it needs, while
    // the state says so.
    renderBlocked(st) {
      const b = st.blocked;
      $('blocked-card').hidden = !(b && (b.reason || b.needs));
      if ($('blocked-card').hidden) return;
      $('blocked-reason').textContent = b.reason || '(no reason given)';
      $('blocked-needs').textContent = b.needs || '';
      $('blocked-needs-row').hidden = !b.needs;
    },

    renderStatus(st, live) {
      const lv = this.state.live || {};
      dims($('status-dims'), [
        ['Lifecycle', [badge(st.lifecycle, 'lifecycle'), st.lifecycleReason ? ` ${st.lifecycleReason}` : '']],
        ['Attention', badge(st.attention, 'attention')],
        ['Activity', st.activity],
        ['Input request', st.currentInputRequestId ? `${st.currentInputRequestId}: ${st.currentInputQuestion || ''}` : 'none'],
        ['Posture', st.posture],
        ['Terminal', st.terminalAttached ? 'attached' : 'none'],
        live && ['Process', lv.running ? 'running in this daemon' : 'not running here'],
        ['Created', when(st.createdAt)],
        ['Updated', when(st.updatedAt)],
        st.endedAt && ['Ended', when(st.endedAt)],
      ]);
    },

    renderLatest(st) {
      const l = st.latest || {};
      const t = l.telemetry;
      const p = l.progress;
      const n = (v) => (v === undefined || v === null ? '—' : Number(v).toLocaleString());
      let progress = '';
      if (p) {
        progress = p.summary || '';
        if (p.units) progress += ` (${n(p.units.completed)} of ${n(p.units.total)} ${p.units.unit || ''})`.replace(/ \)$/, ')');
        if (p.detail) progress += ` — ${p.detail}`;
      }
      const caps = l.capabilities ? Object.entries(l.capabilities).filter(([, v]) => v).map(([k]) => k).join(', ') : '';
      dims($('latest'), [
        ['Activity', l.activity],
        ['Progress', progress],
        ['Tokens', t ? `${n(t.inputTokens)} in · ${n(t.outputTokens)} out · ${n(t.totalTokens)} total` : 'no telemetry yet'],
        t && t.activeToolName && ['Active tool', t.activeToolName],
        l.currentTarget && ['Target', `${l.currentTarget.kind}: ${l.currentTarget.label || l.currentTarget.path || ''}`],
        caps && ['Capabilities', caps],
        ['As of', l.sequence ? `sequence ${l.sequence}, ${when(l.at)}` : '—'],
      ]);
    },

    renderJournal(st) {
      const j = st.journal || {};
      const pd = st.protocolDescriptor || {};
      const msgs = (pd.messages || []).map((m) => `${m.type} (${portability(m)})`).join(', ');
      dims($('journal-meta'), [
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

    // ---- time travel ----

    renderTimeTravel() {
      const last = this.state.journal.lastSequence;
      const seq = this.tt ? this.tt.seq : last;
      const range = $('tt-range');
      range.max = String(Math.max(1, last));
      if (document.activeElement !== range) range.value = String(seq);
      if (document.activeElement !== $('tt-seq')) $('tt-seq').value = String(seq);
      $('tt-seq').max = String(last);
      $('tt-info').textContent = this.tt
        ? `Sequence ${seq} of ${last}: ${this.tt.data.state.lifecycle}, attention ${this.tt.data.state.attention}.`
        : `Live: sequence ${last} is the newest record.`;
      this.renderRecords(this.tt ? this.tt.data.records : this.liveRecords);
    },

    renderRecords(entries) {
      if (!entries) {
        $('tt-records').replaceChildren();
        return;
      }
      $('tt-records').replaceChildren(...entries.slice().reverse().map((e) => {
        const r = e.record;
        return el('tr', {'data-seq': r.sequence, 'data-offset': e.offset},
          el('td', {}, String(e.offset)),
          el('td', {}, String(r.sequence)),
          el('td', {}, el('details', {}, el('summary', {}, r.type), el('pre', {class: 'raw'}, JSON.stringify(r, null, 2)))));
      }));
    },

    async loadLiveRecords() {
      try {
        const data = await api('GET', `/v1/executions/${encodeURIComponent(this.id)}/replay?limit=${RECORDS_SHOWN}`);
        if (this.tt) return;
        this.liveRecords = data.records;
        this.renderRecords(this.liveRecords);
      } catch (err) {
        showError($('exec-error'), err);
      }
    },

    async travel(seq) {
      if (!this.state) return;
      const last = this.state.journal.lastSequence;
      seq = Math.max(1, Math.min(Math.round(seq), last));
      if (!Number.isFinite(seq) || seq >= last) {
        this.goLive();
        return;
      }
      const ask = ++this.ttAsk;
      try {
        const data = await api('GET', `/v1/executions/${encodeURIComponent(this.id)}/replay?toSeq=${seq}&limit=${RECORDS_SHOWN}`);
        if (ask !== this.ttAsk) return;
        clearError($('exec-error'));
        this.tt = {seq: data.toSeq, data};
        this.render();
      } catch (err) {
        if (ask === this.ttAsk) showError($('exec-error'), err);
      }
    },

    goLive() {
      this.ttAsk++;
      this.tt = null;
      this.render();
      if ($('tt-records-box').open) this.loadLiveRecords();
    },

    current() {
      return this.tt ? this.tt.seq : this.state ? this.state.journal.lastSequence : 1;
    },

    // ---- the plain output ----

    // watchOutput keeps the output card current: the last lines, then each
    // new line while the process runs (a follow stream), or the last lines
    // once for an execution that has ended.
    watchOutput() {
      const running = !!(this.state.live && this.state.live.running);
      if (this.outputFollow) return;
      if (running) this.followOutput();
      else if (!this.outputDone) this.loadOutput();
    },

    async loadOutput() {
      const id = this.id;
      this.outputDone = true;
      try {
        const page = await api('GET', `/v1/executions/${encodeURIComponent(id)}/output?tail=${OUTPUT_LINES}`);
        if (id !== this.id) return;
        clearError($('output-error'));
        this.output = page.lines;
      } catch (err) {
        if (id !== this.id) return;
        this.outputDone = false;
        showError($('output-error'), err);
      }
      this.renderOutput();
    },

    async followOutput() {
      const id = this.id;
      const ctl = new AbortController();
      this.outputFollow = ctl;
      let ended = false;
      try {
        const resp = await request('GET', `/v1/executions/${encodeURIComponent(id)}/output?tail=${OUTPUT_LINES}&follow=1`, undefined, ctl.signal);
        clearError($('output-error'));
        this.output = [];
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let rest = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          const lines = (rest + value).split('\n');
          rest = lines.pop();
          const got = lines.filter((l) => l.trim()).map((l) => JSON.parse(l));
          if (got.length) this.addOutput(got);
        }
        ended = true;
      } catch (err) {
        if (err.name !== 'AbortError' && id === this.id) showError($('output-error'), err);
      } finally {
        if (this.outputFollow === ctl) {
          this.outputFollow = null;
          // The stream ends once the execution has ended and its last line
          // is sent, or when the daemon lets it go: the refresh reads the
          // last lines, or follows again, as the state then says. After a
          // refusal the next event about the execution tries again.
          if (ended) this.changed();
        }
      }
    },

    addOutput(lines) {
      this.output = this.output.concat(lines).slice(-OUTPUT_LINES);
      this.renderOutput();
    },

    // renderOutput shows the last output lines, and for an execution that
    // has ended its outcome right above them: "failed (exit status 3)".
    renderOutput() {
      const st = this.state;
      if (!st) return;
      const ended = ENDED.has(st.lifecycle);
      const failed = FAILED.has(st.lifecycle);
      const exit = $('output-exit');
      exit.hidden = !ended;
      exit.textContent = st.lifecycle + (st.lifecycleReason ? ` (${st.lifecycleReason})` : '');
      exit.className = `exit lifecycle-text-${st.lifecycle}`;
      const box = $('output-lines');
      const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 30;
      box.replaceChildren(...this.output.map((e) => {
        const line = escaped(el('div', {class: `line ${e.stream}`, title: `${e.stream}, line ${e.n}, ${e.t}`}), e.line);
        if (e.clipped) line.append(el('span', {class: 'ctl'}, ' [clipped]'));
        return line;
      }));
      if (atBottom) box.scrollTop = box.scrollHeight;
      const following = !!this.outputFollow;
      $('output-note').textContent = st.terminalAttached && !this.output.length
        ? 'on a terminal lane: its output is in the terminal below'
        : `stderr and plain stdout, the last ${OUTPUT_LINES} lines` + (following ? ', live' : '');
      $('output-card').hidden = !(this.output.length || failed || !$('output-error').hidden);
    },

    // ---- the terminal lane ----

    hasLane() {
      const st = this.state;
      return !!(st && ((st.live && st.live.terminalId) || st.terminalAttached));
    },

    watchTerminal() {
      $('terminal-card').hidden = !this.hasLane();
      if (!this.hasLane()) return;
      this.loadTerminal();
      const running = this.state.live && this.state.live.running;
      if (running && !this.pollTimer) {
        this.pollTimer = setInterval(() => this.loadTerminal(), TERMINAL_POLL_MS);
      } else if (!running && this.pollTimer) {
        clearInterval(this.pollTimer);
        this.pollTimer = null;
      }
    },

    async loadTerminal() {
      const id = this.id;
      try {
        const v = await api('GET', `/v1/executions/${encodeURIComponent(id)}/terminal`);
        if (id === this.id) this.showTerminal(v);
      } catch (err) {
        if (id === this.id) showError($('terminal-error'), err);
      }
    },

    // showTerminal brings the view to a snapshot of the lane. The daemon
    // leaves marker lines out of it.
    showTerminal(v) {
      this.terminal = v;
      const s = v.snapshot;
      if (!s) {
        $('terminal-state').textContent = 'This daemon holds no lane for the execution now.';
        return;
      }
      const command = s.command.length > 90 ? s.command.slice(0, 89) + '…' : s.command;
      $('terminal-state').textContent = `${s.id} · ${s.cols}×${s.rows} · ` +
        (s.dead ? `exited${s.exitCode !== undefined ? ' with ' + s.exitCode : ''}` : 'running · click the terminal to type into it') + ` · ${command}`;
      $('terminal-state').title = s.command;
      // The emulator measures its cells when made: in view, not hidden.
      $('terminal-card').hidden = false;
      if (!this.view) this.view = new TermView($('terminal-output'), (data) => this.typed(data));
      this.view.resize(s.cols, s.rows);
      this.view.show(s.recent || '');
    },

    // typed sends what a person types in the view to the lane, in order:
    // keys typed while a send is under way go in the next one.
    typed(data) {
      if (!this.terminal || !this.terminal.available) {
        showError($('terminal-error'), {message: 'The lane has exited: what is typed here reaches nothing.'});
        return;
      }
      this.keys += data;
      if (!this.sendingKeys) this.sendKeys();
    },

    async sendKeys() {
      const id = this.id;
      this.sendingKeys = true;
      try {
        while (this.keys && id === this.id) {
          const data = this.keys;
          this.keys = '';
          const v = await api('POST', `/v1/executions/${encodeURIComponent(id)}/terminal/input`, {data});
          if (id === this.id) this.showTerminal(v);
        }
        clearError($('terminal-error'));
      } catch (err) {
        this.keys = '';
        if (id === this.id) showError($('terminal-error'), err);
      } finally {
        this.sendingKeys = false;
      }
    },

    async loadRecording() {
      clearError($('terminal-error'));
      if (this.player) this.player.stop();
      try {
        const resp = await request('GET', `/v1/executions/${encodeURIComponent(this.id)}/terminal/recording`);
        const text = await resp.text();
        $('rec-screen').hidden = false;
        if (!this.recView) this.recView = new TermView($('rec-screen'), null);
        this.player = new Player(text, this.recView);
        this.player.show();
      } catch (err) {
        showError($('terminal-error'), err);
      }
    },
  };

  // detailOf is a labelled line of a timeline item, or nothing.
  function detailOf(label, value) {
    return value ? el('div', {class: 'item-detail'}, el('b', {}, label + ': '), value) : null;
  }

  function portability(m) {
    const name = PORTABILITY[m.portability] || m.portability;
    return m.portability === 'adapter-scoped' && m.adapterId ? `${name}: ${m.adapterId}` : name;
  }

  // Overlap is how much of the output shown must recur in a newer snapshot
  // for the view to write only what follows it.
  const OVERLAP = 256;

  // TermView is a terminal emulator (xterm.js) of a lane's size showing its
  // output: colours, cursor movement and redraws render as in a terminal.
  // Only what a person does in it (keys, a paste, the mouse) is handed to
  // onInput: the emulator's own answers to the program's queries are
  // dropped, as the same output may be written into the view again.
  class TermView {
    constructor(host, onInput) {
      this.term = new Terminal({
        cols: 120, rows: 40, scrollback: 5000, fontSize: 12, disableStdin: !onInput, cursorBlink: false,
        fontFamily: 'ui-monospace, "SFMono-Regular", "Liberation Mono", "DejaVu Sans Mono", monospace',
        theme: {background: '#0f172a', foreground: '#e2e8f0'},
      });
      this.term.open(host);
      // The buffer is there for scripts to read, the browser tests among them.
      host.xterm = this.term;
      this.shown = '';
      if (!onInput) return;
      let actedAt = -Infinity;
      for (const type of ['keydown', 'keypress', 'beforeinput', 'input', 'paste', 'compositionend', 'mousedown', 'mouseup', 'wheel']) {
        host.addEventListener(type, () => { actedAt = performance.now(); }, true);
      }
      this.term.onData((data) => {
        if (performance.now() - actedAt < 100) onInput(data);
      });
    }

    resize(cols, rows) {
      if (cols && rows && (cols !== this.term.cols || rows !== this.term.rows)) this.term.resize(cols, rows);
    }

    // show brings the view to text, the lane's output as the daemon keeps
    // it: what extends the text shown is written on; when older output has
    // been dropped, the text after the overlap with what is shown; else
    // the whole text afresh.
    show(text) {
      if (text === this.shown) return;
      if (text.startsWith(this.shown)) {
        this.term.write(text.slice(this.shown.length));
      } else {
        const anchor = this.shown.slice(-OVERLAP);
        const at = anchor.length === OVERLAP ? text.lastIndexOf(anchor) : -1;
        if (at >= 0) {
          this.term.write(text.slice(at + OVERLAP));
        } else {
          this.term.reset();
          this.term.write(text);
        }
      }
      this.shown = text;
    }

    write(data) {
      this.term.write(data);
    }

    clear() {
      this.term.reset();
      this.shown = '';
    }
  }

  // Player steps through an asciicast v2 recording in a terminal view:
  // output events are written with their timing, resizes applied, and the
  // recording's own markers (the exit) shown as notes.
  class Player {
    constructor(text, view) {
      const lines = text.split('\n').filter((l) => l.trim());
      if (!lines.length) throw new Error('the recording is empty');
      this.header = JSON.parse(lines[0]);
      this.events = lines.slice(1).map((l) => JSON.parse(l));
      this.view = view;
      this.pos = 0;
      this.timer = null;
      this.rewind();
    }

    rewind() {
      this.pos = 0;
      this.view.clear();
      this.view.resize(this.header.width, this.header.height);
    }

    show() {
      $('rec-play').disabled = $('rec-step').disabled = $('rec-end').disabled = this.events.length === 0;
      this.render();
    }

    render() {
      const n = this.events.length;
      const t = this.pos > 0 ? this.events[this.pos - 1][0] : 0;
      const end = n ? this.events[n - 1][0] : 0;
      $('rec-info').textContent = `${this.header.width}×${this.header.height} · event ${this.pos} of ${n} · ` +
        `${t.toFixed(2)} s of ${end.toFixed(2)} s` + (this.timer ? ' · playing' : '');
      $('rec-play').textContent = this.timer ? 'Pause' : 'Play';
    }

    step() {
      if (this.pos >= this.events.length) return false;
      const [, code, data] = this.events[this.pos++];
      if (code === 'o') {
        this.view.write(data);
      } else if (code === 'm') {
        this.view.write(`\r\n\x1b[2m[${data}]\x1b[0m\r\n`);
      } else if (code === 'r') {
        const [cols, rows] = String(data).split('x').map(Number);
        this.view.resize(cols, rows);
      }
      return true;
    }

    toggle() {
      if (this.timer) {
        this.stop();
        this.render();
        return;
      }
      if (this.pos >= this.events.length) this.rewind();
      const tick = () => {
        this.step();
        if (this.pos >= this.events.length) {
          this.timer = null;
          this.render();
          return;
        }
        const speed = Number($('rec-speed').value) || 1;
        const gap = (this.events[this.pos][0] - this.events[this.pos - 1][0]) / speed;
        this.timer = setTimeout(tick, Math.min(Math.max(gap, 0), 2) * 1000);
        this.render();
      };
      this.timer = setTimeout(tick, 0);
      this.render();
    }

    stop() {
      clearTimeout(this.timer);
      this.timer = null;
    }

    stepOnce() {
      this.stop();
      this.step();
      this.render();
    }

    toEnd() {
      this.stop();
      while (this.step()) { /* every event */ }
      this.render();
    }
  }

  // ---- wiring ----

  function init() {
    fill($('filter-lifecycle'), [['', 'any'], ...LIFECYCLES.map((v) => [v, v])]);
    fill($('filter-attention'), [['', 'any'], ...ATTENTIONS.map((v) => [v, v])]);
    fill($('launch-owner-entity'), OWNER_ENTITIES.map((v) => [v, v]));
    fill($('launch-agent'), AGENTS.map((v) => [v, v]));
    fill($('launch-posture'), POSTURES);
    launchDefaults();

    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      signIn($('token-input').value.trim()).catch((err) => showLogin(err));
    });
    $('signout').addEventListener('click', () => {
      localStorage.removeItem(TOKEN_KEY);
      signedOut();
    });
    // Another tab of this browser signed out, or in.
    window.addEventListener('storage', (e) => {
      if (e.key !== TOKEN_KEY) return;
      if (!e.newValue && token) signedOut();
      else if (e.newValue && !token) signIn(e.newValue).catch((err) => showLogin(err));
    });
    fill($('search-lifecycle'), [['', 'any'], ...LIFECYCLES.map((v) => [v, v])]);
    $('search-agents').replaceChildren(...AGENTS.map((v) => el('option', {value: v})));
    $('search-form').addEventListener('submit', (e) => {
      e.preventDefault();
      search.submit();
    });
    $('search-lifecycle').addEventListener('change', () => search.submit());
    fill($('sessions-status'), [['', 'any'], ...SESSION_STATUSES.map((v) => [v, v])]);
    $('sessions-status').addEventListener('change', () => sessions.open());
    $('sessions-filters').addEventListener('submit', (e) => {
      e.preventDefault();
      sessions.open();
    });
    $('top-search').addEventListener('submit', (e) => {
      e.preventDefault();
      const q = $('top-search-q').value.trim();
      location.hash = '#/search' + (q ? '?' + new URLSearchParams({q}) : '');
      $('top-search-q').value = '';
    });
    $('filters').addEventListener('submit', (e) => {
      e.preventDefault();
      list.open();
    });
    for (const id of ['filter-lifecycle', 'filter-attention']) $(id).addEventListener('change', () => list.open());
    $('launch-form').addEventListener('submit', (e) => {
      e.preventDefault();
      list.launch();
    });

    $('exec-stop').addEventListener('click', async () => {
      clearError($('exec-error'));
      $('exec-stop').disabled = true;
      try {
        await api('POST', `/v1/executions/${encodeURIComponent(detail.id)}/stop`);
        detail.changed();
      } catch (err) {
        showError($('exec-error'), err);
      } finally {
        $('exec-stop').disabled = false;
      }
    });
    $('timeline-older').addEventListener('click', () => detail.loadOlder());
    $('fork-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.submitFork();
    });
    $('fork-cancel').addEventListener('click', () => detail.closeFork(true));
    $('fork-form').addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        detail.closeFork(true);
      }
    });
    $('resume-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.submitResume();
    });
    $('answer-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.answer($('answer-text').value, $('answer-request').textContent);
    });
    $('prompt-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.sendPrompt();
    });
    $('prompt-type').addEventListener('change', () => detail.describePrompt());
    $('prompt-text').addEventListener('input', () => detail.describePrompt());
    $('prompt-text').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        detail.sendPrompt();
      }
    });

    let scrub = null;
    $('tt-range').addEventListener('input', () => {
      $('tt-seq').value = $('tt-range').value;
      clearTimeout(scrub);
      scrub = setTimeout(() => detail.travel(Number($('tt-range').value)), 120);
    });
    $('tt-first').addEventListener('click', () => detail.travel(1));
    $('tt-prev').addEventListener('click', () => detail.travel(detail.current() - 1));
    $('tt-next').addEventListener('click', () => detail.travel(detail.current() + 1));
    $('tt-go').addEventListener('click', () => detail.travel(Number($('tt-seq').value)));
    $('tt-seq').addEventListener('keydown', (e) => {
      if (e.key === 'Enter') detail.travel(Number($('tt-seq').value));
    });
    $('tt-live').addEventListener('click', () => detail.goLive());
    $('tt-banner-live').addEventListener('click', () => detail.goLive());
    $('tt-records-box').addEventListener('toggle', () => {
      if ($('tt-records-box').open && !detail.tt) detail.loadLiveRecords();
    });

    $('rec-load').addEventListener('click', () => detail.loadRecording());
    $('rec-play').addEventListener('click', () => detail.player && detail.player.toggle());
    $('rec-step').addEventListener('click', () => detail.player && detail.player.stepOnce());
    $('rec-end').addEventListener('click', () => detail.player && detail.player.toEnd());

    window.addEventListener('hashchange', route);

    const fromAddress = tokenFromAddress();
    const kept = fromAddress || localStorage.getItem(TOKEN_KEY) || '';
    if (!kept) {
      showLogin();
      return;
    }
    signIn(kept).catch((err) => showLogin(err));
  }

  init();
})();
