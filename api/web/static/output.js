// The output card: the last lines of the agent's plain output, followed
// while its process runs, under the outcome of an execution that ended
// ("failed (exit status 3)").
import {parts, el, escaped, showError, clearError, nearBottom} from './dom.js';
import {execPath, request, api} from './api.js';
import {ENDED} from './format.js';

// The plain output lines shown: the last ones, followed live.
const OUTPUT_LINES = 50;
const FAILED = new Set(['failed', 'terminated']);

// createOutput makes the card; x.view() is what the screen shows, and
// x.changed() has it read the execution again.
export function createOutput(root, x) {
  const p = parts(root);
  let id = '';
  let lines = []; // the last plain output lines
  let follow = null; // the AbortController of the follow stream
  let done = false; // lines holds every line of an ended execution

  async function load() {
    const of = id;
    done = true;
    try {
      const page = await api('GET', execPath(of, `/output?tail=${OUTPUT_LINES}`));
      if (of !== id) return;
      clearError(p.error);
      lines = page.lines;
    } catch (err) {
      if (of !== id) return;
      done = false;
      showError(p.error, err);
    }
    draw();
  }

  async function followLines() {
    const of = id;
    const ctl = new AbortController();
    follow = ctl;
    let ended = false;
    try {
      const resp = await request('GET', execPath(of, `/output?tail=${OUTPUT_LINES}&follow=1`), undefined, ctl.signal);
      clearError(p.error);
      lines = [];
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let rest = '';
      for (;;) {
        const {value, done: over} = await reader.read();
        if (over) break;
        const got = (rest + value).split('\n');
        rest = got.pop();
        const parsed = got.filter((l) => l.trim()).map((l) => JSON.parse(l));
        if (parsed.length) {
          lines = lines.concat(parsed).slice(-OUTPUT_LINES);
          draw();
        }
      }
      ended = true;
    } catch (err) {
      if (err.name !== 'AbortError' && of === id) showError(p.error, err);
    } finally {
      if (follow === ctl) {
        follow = null;
        // The stream ends once the execution has ended and its last line
        // is sent, or when the daemon lets it go: the refresh reads the
        // last lines, or follows again, as the state then says. After a
        // refusal the next event about the execution tries again.
        if (ended) x.changed();
      }
    }
  }

  // draw shows the last lines, and for an execution that has ended its
  // outcome right above them.
  function draw() {
    const v = x.view();
    if (!v) return;
    const st = v.current;
    const ended = ENDED.has(st.lifecycle);
    const failed = FAILED.has(st.lifecycle);
    p.exit.hidden = !ended;
    p.exit.textContent = st.lifecycle + (st.lifecycleReason ? ` (${st.lifecycleReason})` : '');
    p.exit.className = `exit lifecycle-text-${st.lifecycle}`;
    const atBottom = nearBottom(p.lines, 30);
    p.lines.replaceChildren(...lines.map((e) => {
      const line = escaped(el('div', {class: `line ${e.stream}`, title: `${e.stream}, line ${e.n}, ${e.t}`}), e.line);
      if (e.clipped) line.append(el('span', {class: 'ctl'}, ' [clipped]'));
      return line;
    }));
    if (atBottom) p.lines.scrollTop = p.lines.scrollHeight;
    p.note.textContent = st.terminalAttached && !lines.length
      ? 'on a terminal lane: its output is in the terminal below'
      : `stderr and plain stdout, the last ${OUTPUT_LINES} lines` + (follow ? ', live' : '');
    root.hidden = !(lines.length || failed || !p.error.hidden);
  }

  return {
    open(execution) {
      id = execution;
      p.lines.replaceChildren();
      root.hidden = true;
      clearError(p.error);
    },

    close() {
      id = '';
      if (follow) follow.abort();
      follow = null;
      lines = [];
      done = false;
    },

    // refresh keeps the card current: the last lines, then each new line
    // while the process runs (a follow stream), or the last lines once
    // for an execution that has ended.
    refresh(v) {
      const running = !!(v.current.live && v.current.live.running);
      if (follow) return;
      if (running) followLines();
      else if (!done) load();
    },

    render() {
      draw();
    },
  };
}
