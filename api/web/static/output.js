// The output card: the last lines of the agent's plain output, followed
// while its process runs, under the outcome of an execution that ended
// ("failed (exit status 3)"). It opens at the newest line and keeps to
// the tail as lines come, unless the reader has scrolled up to read: then
// what they read stays where it is, and "Jump to newest" takes them back.
import {parts, el, showError, clearError, nearBottom} from './dom.js';
import {styled} from './ansi.js';
import {execPath, request, api} from './api.js';
import {ENDED} from './format.js';

// The plain output lines shown: the last ones, followed live.
const OUTPUT_LINES = 50;
// How close to its end, in pixels, the box counts as showing the tail.
const TAIL_SLACK = 30;
const FAILED = new Set(['failed', 'terminated']);

// createOutput makes the card; x.view() is what the screen shows, and
// x.changed() has it read the execution again.
export function createOutput(root, x) {
  const p = parts(root);
  let id = '';
  let lines = []; // the last plain output lines
  let follow = null; // the AbortController of the follow stream
  let done = false; // lines holds every line of an ended execution
  let tail = true; // the box keeps to its newest line

  // Only the reader moves the box off its end: a scroll that the card
  // makes itself ends at the bottom, which keeps tail set.
  p.lines.addEventListener('scroll', () => {
    if (p.lines.clientHeight === 0) return; // hidden: nothing was read
    tail = nearBottom(p.lines, TAIL_SLACK);
    p.newest.hidden = tail;
  });
  p.newest.addEventListener('click', () => {
    tail = true;
    p.newest.hidden = true;
    p.lines.scrollTop = p.lines.scrollHeight;
  });

  // The key of a line: its stream and its number there, which stay while
  // the window of the last lines moves on.
  const key = (e) => `${e.stream}:${e.n}`;

  // anchor finds the first line the reader sees and how far down the box
  // it is, to put it back there after the lines are drawn again.
  function anchor() {
    const top = p.lines.getBoundingClientRect().top;
    for (const line of p.lines.children) {
      const at = line.getBoundingClientRect();
      if (at.bottom > top) return {key: line.dataset.key, offset: at.top - top};
    }
    return null;
  }

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
    const read = tail ? null : anchor();
    p.lines.replaceChildren(...lines.map((e) => {
      const line = styled(el('div', {class: `line ${e.stream}`, title: `${e.stream}, line ${e.n}, ${e.t}`, 'data-key': key(e)}), e.line);
      if (e.clipped) line.append(el('span', {class: 'ctl'}, ' [clipped]'));
      return line;
    }));
    p.note.textContent = st.terminalAttached && !lines.length
      ? 'on a terminal lane: its output is in the terminal below'
      : `stderr and plain stdout, the last ${OUTPUT_LINES} lines` + (follow ? ', live' : '');
    root.hidden = !(lines.length || failed || !p.error.hidden);
    // Placed once the card is shown: a hidden box has no height to
    // scroll.
    if (tail) {
      p.lines.scrollTop = p.lines.scrollHeight;
    } else if (read) {
      const same = [...p.lines.children].find((l) => l.dataset.key === read.key);
      if (same) p.lines.scrollTop += same.getBoundingClientRect().top - p.lines.getBoundingClientRect().top - read.offset;
    }
    p.newest.hidden = tail || !lines.length;
  }

  return {
    open(execution) {
      id = execution;
      tail = true;
      p.newest.hidden = true;
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
