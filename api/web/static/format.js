// The daemon's vocabulary as the console shows it: the values its pickers
// offer, times, links to executions, sessions and records, and agents'
// Markdown.
import {el} from './dom.js';

// The values the pickers offer. The daemon validates every request and
// names what it accepts when it refuses one.
export const LIFECYCLES = ['starting', 'running', 'completed', 'failed', 'cancelled', 'terminated'];
export const SESSION_STATUSES = ['active', 'paused', 'waiting-approval', 'completed', 'failed', 'cancelled'];
export const ATTENTIONS = ['none', 'autonomous', 'awaiting-operator', 'awaiting-system', 'blocked'];
// Attention states that need a person: marked and listed first.
export const NEEDS_OPERATOR = new Set(['awaiting-operator', 'blocked']);
// Lifecycles after which the outcome is shown beside the output, and a
// resume is offered.
export const ENDED = new Set(['completed', 'failed', 'cancelled', 'terminated']);

// anyOf is a picker's options: "any" first, then each value.
export function anyOf(values) {
  return [['', 'any'], ...values.map((v) => [v, v])];
}

// Portability labels (spec 003). Terminal-only commands are never
// offered as messages: they live in the terminal lane.
export const PORTABILITY = {
  'mission-native': 'Mission-native',
  'cross-agent': 'Cross-agent',
  'adapter-scoped': 'Adapter-scoped',
  'terminal-only': 'Terminal-only',
};

// portability labels a message descriptor or a command, an adapter-scoped
// one with its adapter.
export function portability(m) {
  const name = PORTABILITY[m.portability] || m.portability;
  return m.portability === 'adapter-scoped' && m.adapterId ? `${name}: ${m.adapterId}` : name;
}

export function when(iso) {
  if (!iso || iso.startsWith('0001-')) return '—';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

export function timeOf(iso) {
  return iso ? el('time', {datetime: iso, title: iso}, when(iso)) : null;
}

export function executionHref(id) {
  return '#/executions/' + encodeURIComponent(id);
}

// recordHref opens an execution at one of its records: the timeline item
// of that sequence, loaded and marked.
export function recordHref(id, seq) {
  return executionHref(id) + '/at/' + seq;
}

export const HOSTS_HREF = '#/hosts';

// hostTag is the host an execution runs or ran on, as a list shows it:
// the name, plain for the host serving the console (self), a tag "on
// alpha" that opens the hosts for another; null for none (an execution
// that never ran).
export function hostTag(host, self) {
  if (!host) return null;
  if (!self || host === self) return el('span', {class: 'host-here', title: self ? 'this daemon' : null}, host);
  return el('a', {class: 'host-elsewhere', href: HOSTS_HREF, title: `host ${host}, not the daemon serving this console`}, 'on ' + host);
}

// ago says how long before now (both in ms since the epoch) a moment was,
// in the largest whole unit: "just now", "4 s ago", "3 min ago", ….
export function ago(then, now) {
  const s = Math.floor(Math.max(0, now - then) / 1000);
  if (s < 1) return 'just now';
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['min', 60]]) {
    if (s >= size) return `${Math.floor(s / size)} ${unit} ago`;
  }
  return `${s} s ago`;
}

// bytes says an amount of memory in binary units: "512 MiB", "7.8 GiB".
export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i && n < 10 ? n.toFixed(1) : Math.round(n)} ${units[i]}`;
}

export function sessionHref(id) {
  return '#/sessions/' + encodeURIComponent(id);
}

// seqLink is a record's sequence, a link to it in its execution's
// timeline when the execution is known.
export function seqLink(run, seq) {
  if (!seq) return null;
  return run ? el('a', {class: 'seq', href: recordHref(run, seq), title: `record #${seq} of ${run}`}, '#' + seq) : el('span', {class: 'seq'}, '#' + seq);
}

// linkOf is how an execution derives from another, from its state (the
// header's link): {relation, parent, sequence, history}, or null.
export function linkOf(st) {
  if (!st) return null;
  if (st.forkedFrom) {
    const f = st.forkedFrom;
    return {relation: 'fork', parent: f.agentExecutionId, sequence: f.sequence, history: f.history || ''};
  }
  if (st.resumes) return {relation: 'resume', parent: st.resumes.agentExecutionId, history: st.resumes.history || ''};
  return null;
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
export function markdown(text) {
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
