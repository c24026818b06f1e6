// One execution's screen: its head (badges, owner, the execution it
// derives from, its session and run status, the host that runs it, Stop),
// and its cards, each a module of its own. The screen reads the state
// with the newest timeline page on every live event about the execution
// and draws every card from it; while it travels back in time the cards
// that show state show it as of the sequence chosen.
import {api, execPath, selfHost} from './api.js';
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

export function createExecution(root) {
  const p = parts(root);
  let id = '';
  let state = null; // the live view: projected state + live overlay
  let tt = null; // time travel: {seq, data: {toSeq, state, records}} or null
  let ttAsk = 0; // the newest replay asked for; older answers are dropped
  let runAsk = 0; // the newest read of the run asked for
  let refreshTimer = null;
  let refreshing = false;
  let again = false;
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
    travel: (seq) => travel(seq),
    goLive: () => goLive(),
    current: () => (tt ? tt.seq : state ? state.journal.lastSequence : 1),
  };

  const answer = createAnswer(card(root, 'answer'));
  const timeline = createTimeline(card(root, 'timeline'), x);
  const lineage = createLineage(card(root, 'lineage'), x);
  const todos = createTodos(card(root, 'todos'));
  const approvals = createApprovals(card(root, 'approvals'));
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

  async function travel(seq) {
    if (!state) return;
    const last = state.journal.lastSequence;
    seq = Math.max(1, Math.min(Math.round(seq), last));
    if (!Number.isFinite(seq) || seq >= last) {
      goLive();
      return;
    }
    const asked = ++ttAsk;
    try {
      const data = await api('GET', execPath(id, `/replay?toSeq=${seq}&limit=${RECORDS_SHOWN}`));
      if (asked !== ttAsk) return;
      clearError(p.error);
      tt = {seq: data.toSeq, data};
      screen.render();
    } catch (err) {
      if (asked === ttAsk) showError(p.error, err);
    }
  }

  function goLive() {
    ttAsk++;
    tt = null;
    screen.render();
    timeTravel.refresh();
  }

  const screen = {
    // open shows execution, at the timeline item of record at when not 0.
    async open(execution, at) {
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
      target = at || 0;
      timeline.target(target);
      p.id.textContent = execution;
      await screen.refresh();
      if (fresh && execution === id) lineage.refresh();
      if (!fresh && execution === id && state) timeline.render(x.view());
      if (target && execution === id) timeline.reveal(target);
    },

    close() {
      id = '';
      target = 0;
      state = null;
      tt = null;
      // A replay or a run read still under way is of the execution left.
      ttAsk++;
      runAsk++;
      document.body.classList.remove('time-travel');
      clearTimeout(refreshTimer);
      for (const c of cards) c.close?.();
    },

    // changed takes an event of the live stream about executionId.
    changed(executionId, name) {
      if (!id) return;
      if (executionId === id) screen.refresh(true);
      // A new execution may be a fork or a resume in this one's tree.
      if (name === 'execution.started') lineage.changed();
    },

    // showTerminal takes a terminal snapshot from the live stream.
    showTerminal(data) {
      if (id && data.executionId === id && data.terminal) terminal.show(data.terminal);
    },

    // refresh reads the state and the newest timeline page and draws
    // them; soon, after an event, waits a moment for more.
    async refresh(soon) {
      if (soon) {
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => screen.refresh(), 100);
        return;
      }
      if (refreshing) {
        again = true;
        return;
      }
      refreshing = true;
      const of = id;
      try {
        const [st, page] = await Promise.all([api('GET', execPath(of)), api('GET', execPath(of, '/timeline' + TIMELINE_QUERY))]);
        if (of !== id) return;
        clearError(p.error);
        state = st;
        timeline.take(page, st);
        screen.render();
        loadRun();
        const v = x.view();
        for (const c of [todos, approvals, terminal, output, timeTravel]) c.refresh(v);
      } catch (err) {
        if (of === id) showError(p.error, err);
      } finally {
        refreshing = false;
        if (again) {
          again = false;
          screen.refresh(true);
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
