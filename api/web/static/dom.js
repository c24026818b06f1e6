// DOM helpers shared by every screen and card: building elements, finding
// a card's parts, and showing errors in words.

// el builds an element: el('td', {class: 'x'}, 'text', child, …).
export function el(tag, attrs, ...children) {
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

// fill replaces a select's options with [value, label] pairs.
export function fill(select, options) {
  select.replaceChildren(...options.map(([value, label]) => el('option', {value}, label)));
}

// A screen's root carries data-view, a card's data-card; the elements a
// script uses carry data-part, named within their card.
const SCOPE = '[data-view],[data-card]';

// parts finds the parts of a screen or a card once: parts(root).text is
// its [data-part="text"], root is root itself. A part inside a card
// nested in root belongs to that card and is left out, so that a name
// means one element and no module reaches into another's card.
export function parts(root) {
  const out = {root};
  for (const e of root.querySelectorAll('[data-part]')) {
    if (e.parentElement.closest(SCOPE) === root) out[e.dataset.part] = e;
  }
  return out;
}

// card finds the root of a card named name inside a screen.
export function card(root, name) {
  const c = root.querySelector(`[data-card="${name}"]`);
  if (!c) throw new Error(`the page has no ${name} card`);
  return c;
}

// describe renders an error in words: what was wrong, where, and what is
// accepted there.
export function describe(err) {
  const box = el('div', {class: 'error'});
  box.append(el('p', {class: 'error-message'}, err.message || String(err)));
  if (err.field) box.append(el('p', {class: 'error-field'}, 'Field: ', el('code', {}, err.field)));
  if (err.accepted && err.accepted.length) {
    box.append(el('p', {class: 'error-accepted'}, 'Accepted: ', err.accepted.map((a, i) => [i ? ', ' : '', el('code', {}, a)])));
  }
  if (err.status) box.append(el('p', {class: 'error-code muted'}, `${err.status} ${err.code}`));
  return box;
}

export function showError(box, err) {
  box.replaceChildren(describe(err));
  box.hidden = false;
}

export function clearError(box) {
  box.hidden = true;
  box.replaceChildren();
}

// unmark takes the marks of a refused field off a form's controls.
export function unmark(form) {
  for (const f of form.querySelectorAll('[aria-invalid]')) f.removeAttribute('aria-invalid');
}

// mark marks a form control as the field a refusal named.
export function mark(control) {
  if (control) control.setAttribute('aria-invalid', 'true');
}

export function badge(value, kind) {
  return el('span', {class: `badge ${kind}-${value || 'none'}`}, value || '—');
}

export function setBadge(node, value, kind) {
  node.className = `badge ${kind}-${value || 'none'}`;
  node.textContent = value || '—';
}

// dims fills a description list with [term, value] rows; a falsy row is
// left out, an empty value shown as a dash.
export function dims(dl, rows) {
  dl.replaceChildren(...rows.filter(Boolean).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v === undefined || v === '' ? '—' : v)]));
}

// Controls that would hide, restyle or reorder text: shown as escapes.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

// escaped appends text to a node with its control characters written as
// escapes (\x1b, \u202e), so that a line reads as what the agent wrote.
export function escaped(node, text) {
  let at = 0;
  for (const m of text.matchAll(CONTROLS)) {
    const c = m[0].charCodeAt(0);
    const esc = c < 0x100 ? '\\x' + c.toString(16).padStart(2, '0') : '\\u' + c.toString(16).padStart(4, '0');
    node.append(text.slice(at, m.index), el('span', {class: 'ctl'}, esc));
    at = m.index + m[0].length;
  }
  node.append(text.slice(at));
  return node;
}

// nearBottom reports whether a scrolled box shows its end, within slack
// pixels: such a box is kept at its end as lines are added.
export function nearBottom(box, slack) {
  return box.scrollHeight - box.scrollTop - box.clientHeight < slack;
}
