// The executions screen: the executions, filtered by owner, lifecycle and
// attention, those needing the operator marked and listed first, updated
// live, each with the host that runs or ran it; and the launch form
// (launch.js).
import {api, selfHost} from './api.js';
import {el, fill, parts, card, badge, showError, clearError} from './dom.js';
import {ATTENTIONS, LIFECYCLES, NEEDS_OPERATOR, anyOf, executionHref, hostTag, when} from './format.js';
import {createLaunch} from './launch.js';

export function createList(root) {
  const p = parts(root);
  const launch = createLaunch(card(root, 'launch'));
  let rows = new Map();
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

  const screen = {
    async open() {
      active = true;
      launch.open();
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(filters())) if (v) q.set(k, v);
      q.set('limit', '500');
      const held = new Map();
      fetching = held;
      try {
        const data = await api('GET', '/v1/executions?' + q);
        clearError(p.error);
        const fetched = new Map(data.executions.map((s) => [s.id, s]));
        for (const [id, s] of held) {
          const had = fetched.get(id);
          if (had && had.lastSequence > s.lastSequence) continue;
          if (matches(s)) fetched.set(id, s);
          else fetched.delete(id);
        }
        rows = fetched;
      } catch (err) {
        rows = new Map();
        showError(p.error, err);
      }
      if (fetching === held) fetching = null;
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
      if (!active) return;
      clearTimeout(timer);
      timer = setTimeout(() => screen.render(), 50);
    },

    render() {
      const sorted = [...rows.values()].sort((a, b) => {
        const na = NEEDS_OPERATOR.has(a.attention), nb = NEEDS_OPERATOR.has(b.attention);
        if (na !== nb) return na ? -1 : 1;
        return (b.updatedAt || '').localeCompare(a.updatedAt || '') || a.id.localeCompare(b.id);
      });
      const self = selfHost();
      p.body.replaceChildren(...sorted.map((s) => {
        const needs = NEEDS_OPERATOR.has(s.attention);
        const activity = s.latestActivity && s.latestActivity !== s.activity ? `${s.activity} · ${s.latestActivity}` : s.activity;
        return el('tr', {class: needs ? `needs attn-${s.attention}` : '', 'data-id': s.id, 'data-attention': s.attention, 'data-host': s.host || ''},
          el('td', {class: 'mark', title: needs ? 'needs the operator' : ''}, needs ? '!' : ''),
          el('td', {}, el('a', {href: executionHref(s.id)}, s.id)),
          el('td', {}, badge(s.lifecycle, 'lifecycle')),
          el('td', {}, badge(s.attention, 'attention')),
          el('td', {}, activity),
          el('td', {}, `${s.ownerEntity}/${s.ownerId}`),
          el('td', {}, s.agentId),
          el('td', {class: 'host'}, hostTag(s.host, self) || '—'),
          el('td', {title: s.createdAt}, when(s.createdAt)),
          el('td', {title: s.updatedAt}, when(s.updatedAt)));
      }));
      p.empty.hidden = sorted.length > 0;
    },
  };
  return screen;
}
