// The executions screen: the executions, filtered by owner, lifecycle and
// attention, those needing the operator marked and listed first, updated
// live, each with the host that runs or ran it; and the launch form
// (launch.js). The most recently updated come a page at a time ("Show
// more"), with their total; those that need a person, are running or are
// queued are loaded whatever their number and age, and how many need a
// person is told on the page and in the tab's title.
import {listExecutions, selfHost} from './api.js';
import {el, fill, parts, card, badge, showError, clearError} from './dom.js';
import {ATTENTIONS, LIFECYCLES, NEEDS_OPERATOR, anyOf, executionHref, hostTag, when} from './format.js';
import {createLaunch} from './launch.js';

// ROWS_PER_FRAME is how many rows one drawing makes.
const ROWS_PER_FRAME = 400;
// PAGE is how many of the other executions one request loads.
const PAGE = 500;
// ALWAYS are the filters whose executions are loaded whatever their
// number: a page of the most recently updated would leave out an old
// waiting one behind many quick runs.
const ALWAYS = [...[...NEEDS_OPERATOR].map((a) => ['attention', a]), ['lifecycle', 'running'], ['lifecycle', 'starting']];
const TITLE = document.title;

// rowOf is an execution's row: its title (its first prompt), what it is
// doing (its open question, else its newest progress, else its
// activity), its agent, host and age, and
// its badges; on a phone the row is a card of the first of these.
function rowOf(s, self) {
  const needs = NEEDS_OPERATOR.has(s.attention);
  const activity = s.latestActivity && s.latestActivity !== s.activity ? `${s.activity} · ${s.latestActivity}` : s.activity;
  const what = s.question
    ? el('span', {class: 'row-question', title: s.question}, el('b', {}, 'asks: '), s.question)
    : s.progress
      ? el('span', {class: 'row-progress', title: s.progress}, s.progress)
      : el('span', {class: 'row-activity muted'}, activity || '');
  return el('tr', {class: needs ? `needs attn-${s.attention}` : '', 'data-id': s.id, 'data-attention': s.attention, 'data-host': s.host || ''},
    el('td', {class: 'mark', title: needs ? 'needs the operator' : ''}, needs ? '!' : ''),
    el('td', {class: 'row-id'}, el('a', {href: executionHref(s.id)}, s.id)),
    el('td', {class: 'what'}, s.prompt ? el('div', {class: 'row-title', title: s.prompt}, s.prompt) : null, what),
    el('td', {class: 'row-lifecycle'}, badge(s.lifecycle, 'lifecycle')),
    el('td', {class: 'row-attention'}, badge(s.attention, 'attention')),
    el('td', {class: 'row-owner'}, `${s.ownerEntity}/${s.ownerId}`),
    el('td', {class: 'agent'}, s.agentId),
    el('td', {class: 'host'}, hostTag(s.host, self) || '—'),
    el('td', {class: 'age', title: s.createdAt}, when(s.createdAt)),
    el('td', {class: 'row-updated', title: s.updatedAt}, when(s.updatedAt)));
}

export function createList(root) {
  const p = parts(root);
  const launch = createLaunch(card(root, 'launch'));
  let rows = new Map();
  let drawn = new Map(); // the rows shown, by execution: {sig, tr}
  let more = null; // the timer of the next frame's rows
  // needing holds every execution that needs a person, whatever the
  // filters: the title counts them on every screen.
  let needing = new Map();
  // total is how many executions match the filters; paged is how many of
  // them the pages loaded so far passed over.
  let total = 0;
  let paged = 0;
  let active = false;
  let timer = null;
  // fetching holds the summaries that live events bring while the list is
  // being fetched; the fetched list is older than some of them.
  let fetching = null;

  fill(p.lifecycle, anyOf(LIFECYCLES));
  fill(p.attention, anyOf(ATTENTIONS));
  p.filters.addEventListener('submit', (e) => {
    e.preventDefault();
    screen.open();
  });
  for (const select of [p.lifecycle, p.attention]) select.addEventListener('change', () => screen.open());

  function filters() {
    return {owner: p.owner.value.trim(), lifecycle: p.lifecycle.value, attention: p.attention.value};
  }

  function query(extra) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({...filters(), ...extra})) if (v) q.set(k, v);
    return q;
  }

  // merge adds the fetched summaries to into, keeping a newer one it has.
  function merge(into, list) {
    for (const s of list) {
      const had = into.get(s.id);
      if (!had || had.lastSequence <= s.lastSequence) into.set(s.id, s);
    }
  }

  function countNeeding() {
    const n = needing.size;
    document.title = n > 0 ? `${n} need you · ${TITLE}` : TITLE;
    p.needs.textContent = `${n} need you`;
    p.needs.hidden = n === 0;
  }

  p.more.addEventListener('click', async () => {
    p.more.disabled = true;
    try {
      const page = await listExecutions(query({offset: String(paged), limit: String(PAGE)}));
      merge(rows, page.executions);
      total = page.total;
      paged += PAGE;
      clearError(p.error);
    } catch (err) {
      showError(p.error, err);
    }
    p.more.disabled = false;
    screen.render();
  });

  function matches(s) {
    const f = filters();
    if (f.lifecycle && s.lifecycle !== f.lifecycle) return false;
    if (f.attention && s.attention !== f.attention) return false;
    if (f.owner) {
      const [entity, id] = f.owner.split('/', 2);
      if (s.ownerEntity !== entity || (id && s.ownerId !== id)) return false;
    }
    return true;
  }

  // drawRows shows the rows of sorted. A row whose summary did not change
  // keeps its element: a live update redraws the rows it changed, and
  // moves them, only. At most ROWS_PER_FRAME rows are made at once, the
  // first ones in order, and the rest in the frames after: thousands of
  // running executions show their first rows at once instead of after all
  // of them are made.
  function drawRows(sorted, self) {
    const next = new Map();
    let made = 0;
    for (const s of sorted) {
      const sig = JSON.stringify(s) + '|' + self;
      const had = drawn.get(s.id);
      if (had && had.sig === sig) {
        next.set(s.id, had);
        continue;
      }
      if (made === ROWS_PER_FRAME) {
        more = setTimeout(() => drawRows(sorted, self), 0);
        break;
      }
      made++;
      next.set(s.id, {sig, tr: rowOf(s, self)});
    }
    for (const [key, d] of drawn) if (next.get(key) !== d) d.tr.remove();
    let at = p.body.firstElementChild;
    for (const d of next.values()) {
      if (d.tr === at) at = at.nextElementSibling;
      else p.body.insertBefore(d.tr, at);
    }
    drawn = next;
  }

  const screen = {
    async open() {
      active = true;
      launch.open();
      const f = filters();
      const held = new Map();
      fetching = held;
      try {
        // The first page, then each always-loaded filter within the
        // chosen ones (none when a chosen one excludes it), then every
        // execution that needs a person for the count.
        const always = ALWAYS.filter(([k, v]) => !f[k] || f[k] === v).map(([k, v]) => listExecutions(query({[k]: v})));
        const needs = [...NEEDS_OPERATOR].map((a) => listExecutions(new URLSearchParams({attention: a})));
        const [page, ...rest] = await Promise.all([listExecutions(query({limit: String(PAGE)})), ...always, ...needs]);
        clearError(p.error);
        const fetched = new Map();
        merge(fetched, page.executions);
        for (const r of rest.slice(0, always.length)) merge(fetched, r.executions);
        const need = new Map();
        for (const r of rest.slice(always.length)) merge(need, r.executions);
        for (const [id, s] of held) {
          for (const [into, keep] of [[fetched, matches(s)], [need, NEEDS_OPERATOR.has(s.attention)]]) {
            const had = into.get(id);
            if (had && had.lastSequence > s.lastSequence) continue;
            if (keep) into.set(id, s);
            else into.delete(id);
          }
        }
        rows = fetched;
        needing = need;
        total = page.total;
        paged = PAGE;
      } catch (err) {
        rows = new Map();
        total = paged = 0;
        showError(p.error, err);
      }
      if (fetching === held) fetching = null;
      countNeeding();
      screen.render();
    },

    close() {
      active = false;
    },

    // update takes an execution's summary from the live stream.
    update(summary) {
      if (fetching) fetching.set(summary.id, summary);
      if (matches(summary)) rows.set(summary.id, summary);
      else rows.delete(summary.id);
      if (NEEDS_OPERATOR.has(summary.attention)) needing.set(summary.id, summary);
      else needing.delete(summary.id);
      countNeeding();
      if (!active) return;
      clearTimeout(timer);
      timer = setTimeout(() => screen.render(), 50);
    },

    render() {
      clearTimeout(more);
      // ISO times compare as strings.
      const sorted = [...rows.values()].sort((a, b) => {
        const na = NEEDS_OPERATOR.has(a.attention), nb = NEEDS_OPERATOR.has(b.attention);
        if (na !== nb) return na ? -1 : 1;
        const ua = a.updatedAt || '', ub = b.updatedAt || '';
        return ua < ub ? 1 : ua > ub ? -1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
      });
      drawRows(sorted, selfHost());
      p.empty.hidden = sorted.length > 0;
      // The total is as of the last fetch: with every page loaded the live
      // updates keep the rows exact; otherwise an update cannot tell a new
      // execution from one a page not loaded counts, and the total stands.
      // The pages end early when the always-loaded rows were the last ones.
      const all = paged >= total || sorted.length >= total;
      p.count.textContent = sorted.length > 0 ? `${sorted.length} of ${all ? sorted.length : total} shown` : '';
      p.more.hidden = all;
    },
  };
  return screen;
}
