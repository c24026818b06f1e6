// The search screen: full-text search over every execution, filtered by
// agent, lifecycle, owner and time, the query kept in the address; each
// hit opens its execution at the record.
import {api, agents} from './api.js';
import {el, fill, parts, escaped, showError, clearError, mark, unmark} from './dom.js';
import {LIFECYCLES, anyOf, recordHref, timeOf} from './format.js';

const SEARCH_LIMIT = 50;
// The form's fields (parts) by the query parameter each sets.
const FIELDS = ['q', 'agent', 'lifecycle', 'owner', 'since'];

export function createSearch(root) {
  const p = parts(root);
  let ask = 0; // the newest query asked for; older answers are dropped

  fill(p.lifecycle, anyOf(LIFECYCLES));
  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
  });
  p.lifecycle.addEventListener('change', () => submit());

  // submit puts the form's query in the address, which runs it; the same
  // query again runs again.
  function submit() {
    const q = new URLSearchParams();
    for (const k of FIELDS) {
      const v = p[k].value.trim();
      if (v) q.set(k, v);
    }
    const hash = '#/search?' + q;
    if (location.hash === hash) run(q);
    else location.hash = hash;
  }

  async function run(params) {
    const asked = ++ask;
    unmark(p.form);
    const q = new URLSearchParams(params);
    q.set('limit', String(SEARCH_LIMIT));
    p.submit.disabled = true;
    try {
      const res = await api('GET', '/v1/search?' + q);
      if (asked !== ask) return;
      clearError(p.error);
      render(res);
    } catch (err) {
      if (asked !== ask) return;
      p.results.replaceChildren();
      p.info.textContent = '';
      showError(p.error, err);
      if (FIELDS.includes(err.field)) mark(p[err.field]);
    } finally {
      if (asked === ask) p.submit.disabled = false;
    }
  }

  // render lists the hits, best first: the execution and the record's
  // sequence, a link to that record in its timeline, and the matching
  // text.
  function render(res) {
    const hits = res.hits || [];
    p.info.textContent = !hits.length ? 'Nothing matches.'
      : res.total > hits.length ? `The best ${hits.length} of ${res.total} matches.` : `${res.total} match${res.total === 1 ? '' : 'es'}.`;
    p.results.replaceChildren(...hits.map((h) => el('li', {class: 'hit', 'data-execution': h.executionId, 'data-seq': h.sequence},
      el('div', {class: 'hit-head'},
        el('a', {class: 'hit-link', href: recordHref(h.executionId, h.sequence)}, el('code', {}, h.executionId), ' ', el('span', {class: 'seq'}, '#' + h.sequence)),
        el('span', {class: 'kind'}, h.kind),
        timeOf(h.time)),
      snippetOf(h.snippet))));
  }

  return {
    // open shows the query in the address: its fields filled in, its
    // results read.
    open(params) {
      p.agents.replaceChildren(...agents().map((a) => el('option', {value: a.id})));
      for (const k of FIELDS) p[k].value = params.get(k) || '';
      if (!params.get('q')) {
        ask++;
        p.results.replaceChildren();
        p.info.textContent = '';
        clearError(p.error);
        p.q.focus();
        return;
      }
      run(params);
    },
  };
}

const ENTITIES = {lt: '<', gt: '>', amp: '&', quot: '"', apos: "'"};

// unescapeHTML reads the HTML-escaped text of a snippet back into text.
function unescapeHTML(s) {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name) => {
    if (name[0] !== '#') return ENTITIES[name.toLowerCase()] || whole;
    const n = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : whole;
  });
}

// snippetOf draws a search snippet, HTML-escaped text with the matches in
// <mark>, as text nodes and <mark> elements: nothing in it is parsed as
// HTML.
function snippetOf(snippet) {
  const box = el('div', {class: 'snippet'});
  let marked = false;
  for (const part of (snippet || '').split(/(<mark>|<\/mark>)/)) {
    if (part === '<mark>' || part === '</mark>') {
      marked = part === '<mark>';
      continue;
    }
    if (part) box.append(escaped(el(marked ? 'mark' : 'span'), unescapeHTML(part)));
  }
  return box;
}
