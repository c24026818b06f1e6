// The output card: the last lines of the agent's plain output, followed
// while its process runs, under the outcome of an execution that ended
// ("failed (exit status 3)"). It opens at the newest line and keeps to
// the tail as lines come, unless the reader has scrolled up to read: then
// what they read stays where it is, and "Jump to newest" takes them back.
// Travelling back in time it shows the last lines written before the
// record travelled to (by their times), from the last PAST_LINES.
import {parts, el, showError, clearError, nearBottom} from './dom.js';
import {styled} from './ansi.js';
import {execPath, request, api} from './api.js';
import {ENDED} from './format.js';

// The plain output lines shown: the last ones, followed live.
const OUTPUT_LINES = 50;
// How close to its end, in pixels, the box counts as showing the tail.
const TAIL_SLACK = 30;
const FAILED = new Set(['failed', 'terminated']);
// The lines read once for travelling back, the newest: a position before
// them shows none.
const PAST_LINES = 2000;

// createOutput makes the card; x.view() is what the screen shows, and
// x.changed() has it read the execution again.
export function createOutput(root, x) {
  const p = parts(root);
  let id = '';
  let lines = []; // the last plain output lines
  let follow = null; // the AbortController of the follow stream
  let done = false; // lines holds every line of an ended execution
  let tail = true; // the box keeps to its newest line
  let past = null; // the last PAST_LINES, read for travelling back
  let pastAsk = 0;

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

  // readPast reads the lines that travelling back shows, once.
  async function readPast() {
    const of = id;
    const asked = ++pastAsk;
    try {
      const page = await api('GET', execPath(of, `/output?tail=${PAST_LINES}`));
      if (of !== id || asked !== pastAsk) return;
      past = page.lines;
    } catch (err) {
      if (of === id) showError(p.error, err);
    }
    draw();
  }

  // shownLines is what the box shows of the view: the lines followed, or
  // travelling back, the last ones written by the record shown.
  function shownLines(v) {
    if (v.live) return lines;
    const by = Date.parse(v.tt.at || '');
    if (!past || Number.isNaN(by)) return [];
    return past.filter((e) => Date.parse(e.t) <= by).slice(-OUTPUT_LINES);
  }

  // draw shows the last lines, and for an execution that has ended its
  // outcome right above them.
  function draw() {
    const v = x.view();
    if (!v) return;
    const st = v.live ? v.current : {...v.current, ...v.state};
    const lines = shownLines(v);
    const ended = ENDED.has(st.lifecycle);
    const failed = FAILED.has(st.lifecycle);
    p.exit.hidden = !ended;
    p.exit.textContent = st.lifecycle + (st.lifecycleReason ? ` (${st.lifecycleReason})` : '');
    p.exit.className = `exit lifecycle-text-${st.lifecycle}`;
    const read = tail ? null : anchor();
    // A line already shown keeps its element: text selected in the box
    // stays selected as lines come.
    const kept = new Map();
    for (const line of p.lines.children) kept.set(line.dataset.key, line);
    const want = lines.map((e) => {
      const had = kept.get(key(e));
      if (had) return had;
      const line = styled(el('div', {class: `line ${e.stream}`, title: `${e.stream}, line ${e.n}, ${e.t}`, 'data-key': key(e)}), e.line);
      if (e.clipped) line.append(el('span', {class: 'ctl'}, ' [clipped]'));
      return line;
    });
    const keep = new Set(want);
    for (const line of [...p.lines.children]) if (!keep.has(line)) line.remove();
    let at = p.lines.firstElementChild;
    for (const line of want) {
      if (line === at) at = at.nextElementSibling;
      else p.lines.insertBefore(line, at);
    }
    p.note.textContent = st.terminalAttached && !lines.length
      ? 'on a terminal lane: its output is in the terminal below'
      : !v.live
        ? `as of record #${v.tt.seq}: the last lines written by ${v.tt.at || 'then'}` + (past ? '' : ' (reading)')
        : `stderr and plain stdout, the last ${OUTPUT_LINES} lines` + (follow ? ', live' : '');
    root.dataset.asof = v.live ? '0' : String(v.tt.seq);
    root.hidden = !(lines.length || failed || !p.error.hidden || !v.live);
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
      root.dataset.asof = '0';
      clearError(p.error);
    },

    // close lets the execution go; like the other cards it no longer
    // says it shows a position travelled to.
    close() {
      id = '';
      root.dataset.asof = '0';
      if (follow) follow.abort();
      follow = null;
      lines = [];
      past = null;
      pastAsk++;
      done = false;
    },

    // refresh keeps the card current: the last lines, then each new line
    // while the process runs (a follow stream), or the last lines once
    // for an execution that has ended.
    refresh(v) {
      if (!v.live) {
        if (!past) readPast();
        else draw();
        return;
      }
      const was = past;
      past = null;
      pastAsk++;
      if (was) draw();
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
