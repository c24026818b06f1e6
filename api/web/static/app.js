// The agentjournal operator console: a client of the daemon's API. It
// reads executions, their timelines and journals, sends AgentExecution
// messages, and follows the live event stream. Every error the API answers
// is shown with its message, field and accepted values.
'use strict';

(() => {
  const TOKEN_KEY = 'agentjournal.token';

  // The values the pickers offer. The daemon validates every request and
  // names what it accepts when it refuses one.
  const LIFECYCLES = ['starting', 'running', 'completed', 'failed', 'cancelled', 'terminated'];
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

  const $ = (id) => document.getElementById(id);

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

  async function request(method, path, body) {
    const init = {method, headers: {Authorization: 'Bearer ' + token}};
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
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
    sessionStorage.removeItem(TOKEN_KEY);
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
    sessionStorage.setItem(TOKEN_KEY, token);
    clearError($('login-error'));
    $('signout').hidden = false;
    connectEvents();
    route();
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

  // plain strips terminal escape sequences, so that output reads as text.
  function plain(s) {
    return s
      .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
      .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
      .replace(/\x1b[@-Z\\-_]/g, '')
      .replace(/\r+\n/g, '\n')
      .replace(/\r/g, '');
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

  // ---- views ----

  function showView(id) {
    for (const v of ['login-view', 'list-view', 'execution-view']) $(v).hidden = v !== id;
  }

  function route() {
    if (!token) {
      showLogin();
      return;
    }
    const m = /^#\/executions\/([^/?#]+)/.exec(location.hash);
    if (m) {
      list.leave();
      detail.open(decodeURIComponent(m[1]));
    } else {
      detail.close();
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

    async open(id) {
      if (this.id !== id) {
        this.close();
        this.id = id;
        this.items = new Map();
        this.older = null;
        $('timeline').replaceChildren();
        $('tt-records').replaceChildren();
        $('rec-screen').textContent = '';
        $('rec-info').textContent = '';
        $('terminal-output').textContent = '';
        for (const b of ['prompt-error', 'answer-error', 'exec-error', 'terminal-error']) clearError($(b));
        $('prompt-result').textContent = '';
        $('answer-result').textContent = '';
      }
      showView('execution-view');
      $('exec-id').textContent = id;
      await this.refresh();
    },

    close() {
      this.id = '';
      this.state = null;
      this.tt = null;
      this.terminal = null;
      this.liveRecords = null;
      clearTimeout(this.refreshTimer);
      clearInterval(this.pollTimer);
      this.pollTimer = null;
      if (this.player) this.player.stop();
      this.player = null;
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
        for (const it of page.items) this.items.set(it.sequence, it);
        if (this.older === null && page.next !== null) this.older = page.next;
        this.render();
        this.watchTerminal();
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
      try {
        const page = await api('GET', `/v1/executions/${encodeURIComponent(this.id)}/timeline?limit=${TIMELINE_PAGE}&before=${this.older}`);
        for (const it of page.items) this.items.set(it.sequence, it);
        this.older = page.next;
        this.renderTimeline(this.shown().items, false);
      } catch (err) {
        showError($('exec-error'), err);
      }
    },

    // shown is what the view shows: the live state, or the replayed one.
    shown() {
      if (this.tt) return {state: this.tt.data.state, items: this.tt.data.state.timeline || [], live: false};
      return {state: this.state, items: [...this.items.values()].sort((a, b) => a.sequence - b.sequence), live: true};
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

      $('tt-banner').hidden = live;
      $('tt-banner-seq').textContent = live ? '' : String(this.tt.seq);
      $('tt-banner-last').textContent = String(last);
      document.body.classList.toggle('time-travel', !live);

      this.renderTimeline(items, live);
      this.renderAnswer();
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
      $('timeline').replaceChildren(...items.map((it) => {
        const meta = [];
        if (it.source) meta.push(it.source);
        if (it.messageType) meta.push('type ' + it.messageType);
        if (it.requestId) meta.push('request ' + it.requestId);
        if (it.action) meta.push(it.action);
        if (it.messageId) meta.push(it.messageId);
        const label = it.kind === 'needs-input' && it.requestId === open && open ? 'open' : '';
        return el('li', {class: `item kind-${it.kind}` + (it.source === 'operator' ? ' from-operator' : ''), 'data-seq': it.sequence, 'data-kind': it.kind},
          el('div', {class: 'item-head'},
            el('span', {class: 'seq'}, '#' + it.sequence),
            el('span', {class: 'kind'}, it.kind.replace(/-/g, ' ')),
            label && el('span', {class: 'badge attention-awaiting-operator'}, label),
            el('time', {datetime: it.at, title: it.at}, when(it.at))),
          el('div', {class: 'item-text'}, it.text),
          it.choices && it.choices.length ? el('div', {class: 'muted'}, 'choices: ' + it.choices.join(' / ')) : null,
          meta.length ? el('div', {class: 'item-meta muted'}, meta.join(' · ')) : null);
      }));
      $('timeline-older').hidden = !live || this.older === null;
      if (!items.length) $('timeline').append(el('li', {class: 'muted'}, 'No timeline items yet.'));
      if (atBottom || !live) box.scrollTop = box.scrollHeight;
    },

    descriptors() {
      const pd = this.state && this.state.protocolDescriptor;
      return (pd && pd.messages) || [];
    },

    renderAnswer() {
      const st = this.state;
      const req = st.currentInputRequestId;
      const canAnswer = this.descriptors().some((m) => m.type === 'answer');
      const show = !!req && canAnswer && st.lifecycle === 'running';
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
      $('answer-choices').replaceChildren(...choices.map((c) => el('button', {type: 'button', class: 'choice', onclick: () => this.answer(c)}, c)));
    },

    async answer(text) {
      const req = $('answer-request').textContent;
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

    // promptMessage is the message the prompt box would send: a leading
    // /type picks the type, otherwise the selected descriptor.
    promptMessage() {
      const raw = $('prompt-text').value;
      const m = /^\/([A-Za-z0-9_.:-]+)(?:\s+([\s\S]*))?$/.exec(raw.trim());
      if (m) return {type: m[1], text: m[2] || '', slash: true};
      return {type: $('prompt-type').value, text: raw, slash: false};
    },

    describePrompt() {
      const {type, slash} = this.promptMessage();
      const d = this.descriptors().find((m) => m.type === type);
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
      $('prompt-preview').textContent = !slash ? '' : d
        ? `/${type} sends a ${type} message`
        : `/${type} is not a message this execution declares; the daemon will say which it accepts`;
    },

    async sendPrompt() {
      const {type, text} = this.promptMessage();
      clearError($('prompt-error'));
      $('prompt-result').textContent = '';
      const body = {type};
      if (text.trim()) body.payload = {text};
      $('prompt-send').disabled = true;
      try {
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
        this.pollTimer = setInterval(() => this.loadTerminal(), 1000);
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

    showTerminal(v) {
      this.terminal = v;
      const s = v.snapshot;
      if (!s) {
        $('terminal-state').textContent = 'This daemon holds no lane for the execution now.';
        return;
      }
      const command = s.command.length > 90 ? s.command.slice(0, 89) + '…' : s.command;
      $('terminal-state').textContent = `${s.id} · ${s.cols}×${s.rows} · ` +
        (s.dead ? `exited${s.exitCode !== undefined ? ' with ' + s.exitCode : ''}` : 'running') + ` · ${command}`;
      $('terminal-state').title = s.command;
      const out = $('terminal-output');
      const atBottom = out.scrollHeight - out.scrollTop - out.clientHeight < 30;
      out.textContent = plain(s.recent || '');
      if (atBottom) out.scrollTop = out.scrollHeight;
      $('terminal-input-form').querySelector('button').disabled = !v.available;
    },

    async typeIntoTerminal() {
      clearError($('terminal-error'));
      const data = $('terminal-input').value + '\r';
      try {
        const v = await api('POST', `/v1/executions/${encodeURIComponent(this.id)}/terminal/input`, {data});
        $('terminal-input').value = '';
        this.showTerminal(v);
      } catch (err) {
        showError($('terminal-error'), err);
      }
    },

    async loadRecording() {
      clearError($('terminal-error'));
      if (this.player) this.player.stop();
      try {
        const resp = await request('GET', `/v1/executions/${encodeURIComponent(this.id)}/terminal/recording`);
        this.player = new Player(await resp.text());
        this.player.show();
      } catch (err) {
        showError($('terminal-error'), err);
      }
    },
  };

  function portability(m) {
    const name = PORTABILITY[m.portability] || m.portability;
    return m.portability === 'adapter-scoped' && m.adapterId ? `${name}: ${m.adapterId}` : name;
  }

  // Player steps through an asciicast v2 recording: output events are
  // written to the screen with their timing; markers are shown as notes.
  class Player {
    constructor(text) {
      const lines = text.split('\n').filter((l) => l.trim());
      if (!lines.length) throw new Error('the recording is empty');
      this.header = JSON.parse(lines[0]);
      this.events = lines.slice(1).map((l) => JSON.parse(l));
      this.pos = 0;
      this.screen = '';
      this.timer = null;
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
      const screen = $('rec-screen');
      screen.textContent = plain(this.screen);
      screen.scrollTop = screen.scrollHeight;
      $('rec-play').textContent = this.timer ? 'Pause' : 'Play';
    }

    step() {
      if (this.pos >= this.events.length) return false;
      const [, code, data] = this.events[this.pos++];
      if (code === 'o') this.screen += data;
      else if (code === 'm') this.screen += `\n[${data}]\n`;
      if (this.screen.length > 200000) this.screen = this.screen.slice(-200000);
      return true;
    }

    toggle() {
      if (this.timer) {
        this.stop();
        this.render();
        return;
      }
      if (this.pos >= this.events.length) {
        this.pos = 0;
        this.screen = '';
      }
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

    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      signIn($('token-input').value.trim()).catch((err) => showLogin(err));
    });
    $('signout').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      token = '';
      closeEvents();
      detail.close();
      showLogin();
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
    $('answer-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.answer($('answer-text').value);
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

    $('terminal-input-form').addEventListener('submit', (e) => {
      e.preventDefault();
      detail.typeIntoTerminal();
    });
    $('rec-load').addEventListener('click', () => detail.loadRecording());
    $('rec-play').addEventListener('click', () => detail.player && detail.player.toggle());
    $('rec-step').addEventListener('click', () => detail.player && detail.player.stepOnce());
    $('rec-end').addEventListener('click', () => detail.player && detail.player.toEnd());

    window.addEventListener('hashchange', route);

    const fromAddress = tokenFromAddress();
    const kept = fromAddress || sessionStorage.getItem(TOKEN_KEY) || '';
    if (!kept) {
      showLogin();
      return;
    }
    signIn(kept).catch((err) => showLogin(err));
  }

  init();
})();
