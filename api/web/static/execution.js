// One execution's screen: its head (badges, owner, the execution it
// derives from, its session and run status, the host that runs it, Stop),
// and its cards, each a module of its own. The screen reads the state
// with the newest timeline page when it opens. Live events are taken in
// place: a burst is gathered for a moment, the summary the events carry
// is applied to the state held, and the newest timeline items are read
// (one request); the whole state is read again only when what the
// summary cannot carry changed (the lifecycle, the attention, the open
// request), the todos only on a plan, the approvals only with the open
// request. While it travels back in time every card shows the execution
// as of the sequence chosen, and the address holds it (?asof=N).
import {api, execPath, selfHost} from './api.js';
import {createTranscript} from './transcript.js';
import {el, parts, card, badge, setBadge, showError, clearError} from './dom.js';
import {ENDED, HOSTS_HREF, executionHref, linkOf, sessionHref} from './format.js';
import {createAnswer, canAnswer} from './answer.js';
import {createBlocked} from './blocked.js';
import {createOutput} from './output.js';
import {createTimeline, TIMELINE_QUERY} from './timeline.js';
import {createResume} from './resume.js';
import {createPrompt} from './prompt.js';
import {createLineage} from './lineage.js';
import {createTodos, createApprovals} from './contract.js';
import {createTimeTravel, RECORDS_SHOWN} from './timetravel.js';
import {createStatus, createLatest, createJournal} from './facts.js';
import {createTerminal} from './terminal.js';

// atOf is when the last record a replay folded was written.
function atOf(replay) {
  const last = replay.records && replay.records[replay.records.length - 1];
  return last && last.record ? last.record.occurredAt : '';
}

// LIVE_GATHER_MS is how long the screen gathers a burst of live events
// before taking them as one.
const LIVE_GATHER_MS = 100;

export function createExecution(root) {
  const p = parts(root);
  let id = '';
  let state = null; // the live view: projected state + live overlay
  let tt = null; // time travel: {seq, data: {toSeq, state, records}} or null
  let ttAsk = 0; // the newest replay asked for; older answers are dropped
  let runAsk = 0; // the newest read of the run asked for
  let refreshTimer = null;
  // opened counts the screen's closes: a read begun before the last one
  // is of a screen gone, even when the same execution was opened again,
  // and leaves refreshing, applying and again to the reads of the screen
  // opened since.
  let opened = 0;
  let refreshing = false;
  let again = false;
  let pending = []; // the live events about the execution not yet applied
  let applying = false;
  let todosDue = false; // a plan came: the todos are to be read again
  // A request, a message (an answer) or a state change (a run's end
  // closes its requests) came: the approvals are to be read again.
  let approvalsDue = false;
  let target = 0; // the sequence of the record the address opens the view at, or 0

  // x is what the cards may ask of the screen.
  const x = {
    // view is what the screen shows, or null before the first read:
    // state is the state shown (replayed while travelling back), current
    // the live one, live whether they are the same.
    view() {
      if (!state) return null;
      return {id, live: !tt, state: tt ? tt.data.state : state, current: state, tt};
    },
    render: () => screen.render(),
    changed: () => screen.refresh(true),
    fail: (err) => showError(p.error, err),
    canAnswer: () => canAnswer(state),
    answer: (text, req) => answer.answer(text, req),
    travel: (seq) => travel(seq, true),
    goLive: () => goLive(),
    current: () => (tt ? tt.seq : state ? state.journal.lastSequence : 1),
  };

  const answer = createAnswer(card(root, 'answer'));
  const timeline = createTimeline(card(root, 'timeline'), x);
  const lineage = createLineage(card(root, 'lineage'), x);
  const todos = createTodos(card(root, 'todos'), x);
  const approvals = createApprovals(card(root, 'approvals'), x);
  const output = createOutput(card(root, 'output'), x);
  const terminal = createTerminal(card(root, 'terminal'));
  const timeTravel = createTimeTravel(card(root, 'timetravel'), x);
  // Every card, in the order they are drawn.
  const cards = [
    createResume(card(root, 'resume')),
    timeline,
    answer,
    createBlocked(card(root, 'blocked')),
    output,
    createPrompt(card(root, 'prompt')),
    createStatus(card(root, 'status')),
    createLatest(card(root, 'latest')),
    createJournal(card(root, 'journal')),
    createTranscript(card(root, 'transcript')),
    timeTravel,
    lineage, todos, approvals, terminal,
  ];

  // Stop ends the agent's process and cannot be taken back, so it asks
  // first, in the page, naming the execution it would stop; Cancel or
  // Escape backs out and leaves the agent running.
  p.stop.addEventListener('click', () => {
    clearError(p.error);
    p.stopQuestion.replaceChildren('Stop ', el('code', {}, id), '? Its agent process is ended now.');
    p.stopConfirm.dataset.execution = id;
    p.stopConfirm.hidden = false;
    p.stopCancel.focus();
  });
  p.stopCancel.addEventListener('click', () => cancelStop());
  // Escape backs out wherever the focus is: the question may have lost it
  // to a click elsewhere on the page.
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !p.stopConfirm.hidden) cancelStop();
  });
  p.stopYes.addEventListener('click', async () => {
    const of = p.stopConfirm.dataset.execution;
    p.stopConfirm.hidden = true;
    // The question named one execution: an answer given after another
    // was opened is not an answer about that one.
    if (of !== id) return;
    p.stop.disabled = true;
    try {
      await api('POST', execPath(of, '/stop'));
      screen.refresh(true);
    } catch (err) {
      showError(p.error, err);
    } finally {
      p.stop.disabled = false;
    }
  });

  function cancelStop() {
    const asked = !p.stopConfirm.hidden;
    p.stopConfirm.hidden = true;
    if (asked && !p.stop.hidden) p.stop.focus();
  }
  p.ttLive.addEventListener('click', () => goLive());

  // loadRun names the execution's session and its run status in the
  // head, from its AgentRun.
  async function loadRun() {
    const of = id;
    const asked = ++runAsk;
    try {
      const run = await api('GET', execPath(of, '/run'));
      if (asked !== runAsk || of !== id) return;
      const sid = run.sessionId || of;
      p.session.replaceChildren('Session ', el('a', {href: sessionHref(sid), 'data-id': sid}, sid), ' · run ', badge(run.status, 'run'));
      p.session.hidden = false;
    } catch (err) {
      if (asked === runAsk && of === id) showError(p.error, err);
    }
  }

  // drawLink shows, in the head, the execution this one was forked from
  // or resumes.
  function drawLink() {
    const l = linkOf(state);
    p.link.hidden = !l;
    if (!l) return;
    p.link.replaceChildren(
      l.relation === 'fork' ? 'Forked from ' : 'Resumes ',
      el('a', {href: executionHref(l.parent), 'data-id': l.parent}, l.parent),
      l.relation === 'fork' ? el('span', {class: 'at'}, ` at #${l.sequence}`) : '',
      l.history ? ` · history ${l.history}` : '');
  }

  // drawHost names, in the head, the host that runs or ran the execution,
  // and says when it is not the daemon serving the console: commands
  // given here go there.
  function drawHost(st) {
    const self = selfHost();
    p.host.hidden = !st.host;
    if (!st.host) return;
    const ended = ENDED.has(st.lifecycle);
    let where = '';
    if (self && st.host === self) where = ' (this daemon)';
    else if (self) where = ', not the daemon serving this console' + (ended ? '' : ': commands given here are forwarded there');
    p.host.dataset.host = st.host;
    p.host.replaceChildren(ended ? 'Ran on host ' : 'Runs on host ', el('a', {href: HOSTS_HREF}, st.host), where);
  }

  // travel shows the execution as of record seq; address puts the
  // position in the address (replacing the entry, so that scrubbing does
  // not fill the history), which an address that named it already has.
  async function travel(seq, address) {
    if (!state) return;
    const last = state.journal.lastSequence;
    seq = Math.max(1, Math.min(Math.round(seq), last));
    if (!Number.isFinite(seq) || seq >= last) {
      goLive();
      return;
    }
    const asked = ++ttAsk;
    if (address) setAsOf(seq);
    try {
      const data = await api('GET', execPath(id, `/replay?toSeq=${seq}&limit=${RECORDS_SHOWN}`));
      if (asked !== ttAsk) return;
      clearError(p.error);
      tt = {seq: data.toSeq, data, at: atOf(data)};
      screen.render();
      output.refresh(x.view());
    } catch (err) {
      if (asked === ttAsk) showError(p.error, err);
    }
  }

  function goLive() {
    const was = tt;
    ttAsk++;
    tt = null;
    setAsOf(0);
    screen.render();
    timeTravel.refresh();
    if (was && state) output.refresh(x.view());
  }

  // setAsOf writes the position travelled to into the address, or takes
  // it out (0): #/executions/ID[/at/N][?asof=N].
  function setAsOf(seq) {
    if (!id) return;
    const h = location.hash;
    const base = h.replace(/[?].*$/, '');
    const q = new URLSearchParams(h.includes('?') ? h.slice(h.indexOf('?') + 1) : '');
    if (seq) q.set('asof', String(seq));
    else q.delete('asof');
    const next = base + (q.toString() ? '?' + q : '');
    if (next !== h) history.replaceState(history.state, '', location.pathname + location.search + next);
  }

  // apply takes the live events gathered: the newest summary they carry
  // goes into the state held, and what it cannot say is read: the newest
  // timeline items, and the whole state only when the lifecycle, the
  // attention or the open request changed.
  async function apply() {
    if (applying) {
      refreshTimer = setTimeout(() => apply(), LIVE_GATHER_MS);
      return;
    }
    const batch = pending;
    pending = [];
    if (batch.some((d) => d.signal === 'plan')) todosDue = true;
    if (batch.some((d) => d.signal === 'needs_input' || d.record === 'message.accepted' || d.record === 'state.changed')) approvalsDue = true;
    if (!batch.length || !state || refreshing) {
      if (batch.length) screen.refresh(true);
      return;
    }
    const gen = opened;
    let sum = null;
    for (const d of batch) if (d.state && (!sum || d.state.lastSequence >= sum.lastSequence)) sum = d.state;
    const whole = !sum || sum.lifecycle !== state.lifecycle || sum.attention !== state.attention ||
      (sum.currentInputRequestId || '') !== (state.currentInputRequestId || '') || (sum.host || '') !== (state.host || '');
    if (whole) {
      screen.refresh();
      return;
    }
    applying = true;
    try {
      state.activity = sum.activity;
      if (sum.latestActivity) state.latest = {...state.latest, activity: sum.latestActivity};
      state.updatedAt = sum.updatedAt;
      state.journal = {...state.journal, lastSequence: Math.max(state.journal.lastSequence, sum.lastSequence), recordCount: sum.recordCount};
      await timeline.update();
      if (gen !== opened) return;
      clearError(p.error);
      screen.render();
      readParts(x.view(), false, false);
    } catch (err) {
      if (gen === opened) showError(p.error, err);
    } finally {
      if (gen === opened) applying = false;
    }
  }

  // readParts reads again the todos and the approvals when the events
  // taken said they changed, or when told to (todos, approvals), and the
  // time travel card's records when they are shown.
  function readParts(v, todosNow, approvalsNow) {
    if (todosDue || todosNow) {
      todosDue = false;
      todos.refresh(v);
    }
    if (approvalsDue || approvalsNow) {
      approvalsDue = false;
      approvals.refresh(v);
    }
    timeTravel.refresh();
  }

  const screen = {
    // open shows execution, at the timeline item of record at when not 0,
    // as of record asof when not 0 (else live).
    async open(execution, at, asof) {
      const fresh = id !== execution;
      if (fresh) {
        screen.close();
        id = execution;
        clearError(p.error);
        p.link.hidden = true;
        p.host.hidden = true;
        p.session.hidden = true;
        p.stopConfirm.hidden = true;
        // Where the last execution's page was scrolled to says nothing
        // about this one's.
        window.scrollTo(0, 0);
        for (const c of cards) c.open?.(id);
      }
      const gen = opened;
      target = at || 0;
      timeline.target(target);
      p.id.textContent = execution;
      await screen.refresh();
      if (gen !== opened) return;
      if (fresh) lineage.refresh();
      if (!fresh && state) timeline.render(x.view());
      if (target) timeline.reveal(target);
      if (asof && (!tt || tt.seq !== asof)) travel(asof, false);
      else if (!asof && tt) goLive();
    },

    close() {
      id = '';
      target = 0;
      state = null;
      tt = null;
      opened++;
      refreshing = false;
      applying = false;
      again = false;
      // A replay or a run read still under way is of the execution left.
      ttAsk++;
      runAsk++;
      // The banner and the cards say no position until the next open
      // has read one: what a closed screen left drawn is not as of the
      // position the address of the next open names, even when it is
      // the same.
      document.body.classList.remove('time-travel');
      p.ttBanner.hidden = true;
      p.ttSeq.textContent = '';
      clearTimeout(refreshTimer);
      pending = [];
      for (const c of cards) c.close?.();
    },

    // changed takes an event of the live stream: its name and data.
    changed(data, name) {
      if (!id) return;
      if (data.executionId === id) {
        pending.push(data);
        // A burst of events is taken as one: what they changed is read
        // once.
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => apply(), LIVE_GATHER_MS);
      }
      // A new execution may be a fork or a resume in this one's tree.
      if (name === 'execution.started') lineage.changed();
    },

    // showTerminal takes a terminal snapshot from the live stream.
    showTerminal(data) {
      if (id && data.executionId === id && data.terminal) terminal.show(data.terminal);
    },

    // refresh reads the state and the timeline and draws them: the first
    // time the newest page and every card, then the new items and the
    // cards whose part changed with the state. soon waits a moment for
    // more.
    async refresh(soon) {
      if (soon) {
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => screen.refresh(), LIVE_GATHER_MS);
        return;
      }
      if (refreshing || applying) {
        again = true;
        return;
      }
      refreshing = true;
      const of = id;
      const gen = opened;
      const was = state;
      try {
        const read = api('GET', execPath(of));
        if (was) {
          await timeline.update();
        } else {
          const page = await api('GET', execPath(of, '/timeline' + TIMELINE_QUERY));
          if (gen !== opened) return;
          timeline.take(page, await read);
        }
        const st = await read;
        if (gen !== opened) return;
        clearError(p.error);
        state = st;
        screen.render();
        const v = x.view();
        const moved = (k) => !was || was[k] !== st[k];
        // The run's status and the terminal lane follow the lifecycle;
        // the approvals, the open request.
        if (moved('lifecycle')) {
          loadRun();
          terminal.refresh(v);
        }
        output.refresh(v);
        readParts(v, !was, moved('currentInputRequestId') || moved('lifecycle'));
      } catch (err) {
        if (gen === opened) showError(p.error, err);
      } finally {
        if (gen === opened) {
          refreshing = false;
          if (again) {
            again = false;
            screen.refresh(true);
          }
        }
      }
    },

    render() {
      if (!state) return;
      const v = x.view();
      setBadge(p.lifecycle, v.state.lifecycle, 'lifecycle');
      setBadge(p.attention, v.state.attention, 'attention');
      setBadge(p.activity, v.state.activity, 'activity');
      const running = state.live && state.live.running;
      // A process another host runs is stopped through this daemon too:
      // the stop is forwarded to its host.
      const elsewhere = !running && state.lifecycle === 'running' && state.host && selfHost() && state.host !== selfHost();
      p.running.textContent = running ? 'process running' : elsewhere ? `process on ${state.host}` : 'no process here';
      p.running.className = 'badge ' + (running ? 'running-yes' : elsewhere ? 'running-elsewhere' : 'running-no');
      p.owner.textContent = `${v.state.ownerEntity}/${v.state.ownerId} · agent ${v.state.agentId} · ${v.state.posture || 'structured-headless'}`;
      p.stop.hidden = !running && !elsewhere;
      // Nothing is left to stop once the process has ended.
      if (p.stop.hidden) p.stopConfirm.hidden = true;
      drawLink();
      drawHost(v.state);
      p.ttBanner.hidden = v.live;
      p.ttSeq.textContent = v.live ? '' : String(tt.seq);
      p.ttLast.textContent = String(state.journal.lastSequence);
      document.body.classList.toggle('time-travel', !v.live);
      for (const c of cards) c.render?.(v);
    },
  };
  return screen;
}
