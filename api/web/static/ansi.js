// Colours in plain output: agents run without a terminal still colour
// their lines with ANSI escape sequences (ECMA-48 SGR, "\x1b[31m"). The
// output card shows them as styled text. Text is only ever appended as
// text nodes, never parsed as HTML; the style of a run is a set of class
// names and, for 256 and 24-bit colours, CSSOM properties (which the
// page's policy admits, unlike style attributes). Every other escape
// sequence (cursor moves, erasing, titles, links) is removed: it has no
// meaning in a list of lines, and written out it buries what the agent
// said under "\x1b[2K".
import {el, escaped} from './dom.js';

// A control sequence (CSI: ESC [ parameters intermediates final), an
// operating system command or string (ESC ] … BEL or ESC \; also ESC P,
// ESC X, ESC ^, ESC _), or any other two-character escape. The C1 form
// of CSI (U+009B) is read the same as ESC [.
const SEQUENCE = /(?:\x1b\[|\x9b)([0-?]*)[ -/]*([@-~])|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[ -/]*[0-~]?/g;

// The 256-colour palette past the 16 named colours: a 6x6x6 cube, then
// 24 greys.
function palette(n) {
  if (n < 232) {
    const c = n - 16;
    const level = (v) => (v ? 55 + v * 40 : 0);
    return `rgb(${level(Math.floor(c / 36))}, ${level(Math.floor(c / 6) % 6)}, ${level(c % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g}, ${g}, ${g})`;
}

// A colour is a class for the 16 named ones (ansi-fg-1, ansi-bg-9) so
// that the stylesheet picks shades readable on the card, or a CSS colour.
function colour(params, i) {
  if (params[i + 1] === 5 && params[i + 2] !== undefined) {
    const n = params[i + 2];
    return [n < 16 ? n : palette(n), 3];
  }
  if (params[i + 1] === 2 && params[i + 4] !== undefined) {
    const [r, g, b] = params.slice(i + 2, i + 5).map((v) => Math.min(255, v));
    return [`rgb(${r}, ${g}, ${b})`, 5];
  }
  return [undefined, params[i + 1] === 5 ? 3 : params[i + 1] === 2 ? 5 : 1];
}

// apply changes a style by one SGR sequence's parameters; codes it does
// not know (blink, fonts, …) are let go.
function apply(style, params) {
  if (!params.length) params = [0];
  for (let i = 0; i < params.length;) {
    const p = params[i];
    let used = 1;
    if (p === 0) Object.assign(style, {bold: false, dim: false, italic: false, underline: false, inverse: false, strike: false, fg: undefined, bg: undefined});
    else if (p === 1) style.bold = true;
    else if (p === 2) style.dim = true;
    else if (p === 3) style.italic = true;
    else if (p === 4) style.underline = true;
    else if (p === 7) style.inverse = true;
    else if (p === 9) style.strike = true;
    else if (p === 22) style.bold = style.dim = false;
    else if (p === 23) style.italic = false;
    else if (p === 24) style.underline = false;
    else if (p === 27) style.inverse = false;
    else if (p === 29) style.strike = false;
    else if (p >= 30 && p <= 37) style.fg = p - 30;
    else if (p === 38) [style.fg, used] = colour(params, i);
    else if (p === 39) style.fg = undefined;
    else if (p >= 40 && p <= 47) style.bg = p - 40;
    else if (p === 48) [style.bg, used] = colour(params, i);
    else if (p === 49) style.bg = undefined;
    else if (p >= 90 && p <= 97) style.fg = p - 90 + 8;
    else if (p >= 100 && p <= 107) style.bg = p - 100 + 8;
    i += used;
  }
}

function plain(style) {
  return !style.bold && !style.dim && !style.italic && !style.underline && !style.inverse && !style.strike &&
    style.fg === undefined && style.bg === undefined;
}

// span makes the element that carries one run of styled text.
function span(style) {
  const classes = ['bold', 'dim', 'italic', 'underline', 'inverse', 'strike'].filter((k) => style[k]).map((k) => 'ansi-' + k);
  const s = el('span', {class: ['ansi', ...classes].join(' ')});
  for (const [key, prop] of [['fg', 'color'], ['bg', 'backgroundColor']]) {
    const v = style[key];
    if (typeof v === 'number') s.classList.add(`ansi-${key}-${v}`);
    else if (v) s.style[prop] = v;
  }
  return s;
}

// styled appends a line of plain output to node: the runs of text in the
// style its SGR sequences give them, its other escape sequences removed,
// and the control characters left over written as escapes (escaped in
// dom.js), so that none can hide or reorder what is shown.
export function styled(node, text) {
  const style = {};
  let at = 0;
  const run = (upto) => {
    const part = text.slice(at, upto);
    if (part) node.append(escaped(plain(style) ? document.createDocumentFragment() : span(style), part));
  };
  for (const m of text.matchAll(SEQUENCE)) {
    run(m.index);
    at = m.index + m[0].length;
    if (m[2] === 'm' && /^[0-9;:]*$/.test(m[1])) {
      apply(style, m[1] === '' ? [] : m[1].split(/[;:]/).map((v) => (v === '' ? 0 : Number(v))));
    }
  }
  run(text.length);
  return node;
}
