// A terminal emulator view of a lane's output (xterm.js, window.Terminal)
// and a player of asciicast v2 recordings in such a view.

// OVERLAP is how much of the output shown must recur in a newer snapshot
// for the view to write only what follows it.
const OVERLAP = 256;

// TermView is a terminal emulator of a lane's size showing its output:
// colours, cursor movement and redraws render as in a terminal. Only what
// a person does in it (keys, a paste, the mouse) is handed to onInput: the
// emulator's own answers to the program's queries are dropped, as the
// same output may be written into the view again.
export class TermView {
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
  // been dropped, the text after the overlap with what is shown; else the
  // whole text afresh.
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
// recording's own markers (the exit) shown as notes. controls are the
// player's buttons (play, step, end), its speed picker and its info line.
export class Player {
  constructor(text, view, controls) {
    const lines = text.split('\n').filter((l) => l.trim());
    if (!lines.length) throw new Error('the recording is empty');
    this.header = JSON.parse(lines[0]);
    this.events = lines.slice(1).map((l) => JSON.parse(l));
    this.view = view;
    this.controls = controls;
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
    const c = this.controls;
    c.play.disabled = c.step.disabled = c.end.disabled = this.events.length === 0;
    this.render();
  }

  render() {
    const n = this.events.length;
    const t = this.pos > 0 ? this.events[this.pos - 1][0] : 0;
    const end = n ? this.events[n - 1][0] : 0;
    this.controls.info.textContent = `${this.header.width}×${this.header.height} · event ${this.pos} of ${n} · ` +
      `${t.toFixed(2)} s of ${end.toFixed(2)} s` + (this.timer ? ' · playing' : '');
    this.controls.play.textContent = this.timer ? 'Pause' : 'Play';
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
      const speed = Number(this.controls.speed.value) || 1;
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
