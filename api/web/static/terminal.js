// The terminal lane card, labelled native and advanced: a terminal
// emulator of the lane's size showing its output (marker lines left out
// by the daemon) that sends what is typed into it to the lane, and a
// player for its recording.
import {api, execPath, request} from './api.js';
import {parts, showError, clearError} from './dom.js';
import {TermView, Player} from './termview.js';

// How often a running lane is read for the view.
const TERMINAL_POLL_MS = 500;

export function createTerminal(root) {
  const p = parts(root);
  let id = '';
  let terminal = null; // the last snapshot's answer
  let view = null; // the lane's view, made when first shown
  let recView = null; // the recording's view
  let player = null;
  let pollTimer = null;
  let keys = ''; // keys typed in the view, not yet sent
  let sendingKeys = false;

  p.load.addEventListener('click', () => loadRecording());
  p.play.addEventListener('click', () => player && player.toggle());
  p.step.addEventListener('click', () => player && player.stepOnce());
  p.end.addEventListener('click', () => player && player.toEnd());

  function hasLane(st) {
    return !!(st && ((st.live && st.live.terminalId) || st.terminalAttached));
  }

  async function load() {
    const of = id;
    try {
      const v = await api('GET', execPath(of, '/terminal'));
      if (of === id) card.show(v);
    } catch (err) {
      if (of === id) showError(p.error, err);
    }
  }

  // typed sends what a person types in the view to the lane, in order:
  // keys typed while a send is under way go in the next one.
  function typed(data) {
    if (!terminal || !terminal.available) {
      showError(p.error, {message: 'The lane has exited: what is typed here reaches nothing.'});
      return;
    }
    keys += data;
    if (!sendingKeys) sendKeys();
  }

  async function sendKeys() {
    const of = id;
    sendingKeys = true;
    try {
      while (keys && of === id) {
        const data = keys;
        keys = '';
        const v = await api('POST', execPath(of, '/terminal/input'), {data});
        if (of === id) card.show(v);
      }
      clearError(p.error);
    } catch (err) {
      keys = '';
      if (of === id) showError(p.error, err);
    } finally {
      sendingKeys = false;
    }
  }

  async function loadRecording() {
    clearError(p.error);
    if (player) player.stop();
    try {
      const resp = await request('GET', execPath(id, '/terminal/recording'));
      const text = await resp.text();
      p.screen.hidden = false;
      if (!recView) recView = new TermView(p.screen, null);
      player = new Player(text, recView, p);
      player.show();
    } catch (err) {
      showError(p.error, err);
    }
  }

  const card = {
    open(execution) {
      id = execution;
      if (view) view.clear();
      p.screen.hidden = true;
      p.info.textContent = '';
      clearError(p.error);
    },

    close() {
      id = '';
      terminal = null;
      clearInterval(pollTimer);
      pollTimer = null;
      if (player) player.stop();
      player = null;
      keys = '';
    },

    // refresh shows the lane of an execution that has one, read again
    // every TERMINAL_POLL_MS while its process runs.
    refresh(v) {
      const st = v.current;
      root.hidden = !hasLane(st);
      if (!hasLane(st)) return;
      load();
      const running = st.live && st.live.running;
      if (running && !pollTimer) {
        pollTimer = setInterval(load, TERMINAL_POLL_MS);
      } else if (!running && pollTimer) {
        clearInterval(pollTimer);
        pollTimer = null;
      }
    },

    // show brings the view to a snapshot of the lane. The daemon leaves
    // marker lines out of it.
    show(v) {
      terminal = v;
      const s = v.snapshot;
      if (!s) {
        p.state.textContent = 'This daemon holds no lane for the execution now.';
        return;
      }
      const command = s.command.length > 90 ? s.command.slice(0, 89) + '…' : s.command;
      p.state.textContent = `${s.id} · ${s.cols}×${s.rows} · ` +
        (s.dead ? `exited${s.exitCode !== undefined ? ' with ' + s.exitCode : ''}` : 'running · click the terminal to type into it') + ` · ${command}`;
      p.state.title = s.command;
      // The emulator measures its cells when made: in view, not hidden.
      root.hidden = false;
      if (!view) view = new TermView(p.output, typed);
      view.resize(s.cols, s.rows);
      view.show(s.recent || '');
    },
  };
  return card;
}
