// The sessions screen: every session, or those of one status, newest
// first. A live event whose execution changed its lifecycle or attention
// reads that execution's session alone and redraws its row: the list is
// read whole only when the screen opens.
import {api} from './api.js';
import {el, fill, parts, badge, showError, clearError} from './dom.js';
import {SESSION_STATUSES, anyOf, sessionHref, when} from './format.js';

export function createSessions(root) {
  const p = parts(root);
  let active = false;
  let ask = 0;
  let rows = []; // the sessions shown, in order
  let seen = new Map(); // an execution's lifecycle and attention, as last seen
  let stale = new Set(); // the sessions to read again
  let timer = null;

  fill(p.status, anyOf(SESSION_STATUSES));
  p.status.addEventListener('change', () => screen.open());
  p.filters.addEventListener('submit', (e) => {
    e.preventDefault();
    screen.open();
  });

  function row(ss) {
    return el('tr', {'data-id': ss.sessionId, 'data-status': ss.status},
      el('td', {}, el('a', {href: sessionHref(ss.sessionId)}, ss.sessionId)),
      el('td', {}, badge(ss.status, 'session')),
      el('td', {}, ss.agentId || '—'),
      el('td', {}, ss.productId || '—'),
      el('td', {}, ss.userId || '—'),
      el('td', {}, String((ss.runIds || []).length)),
      el('td', {}, ss.resumable ? 'yes' : 'no'),
      el('td', {title: ss.startedAt}, when(ss.startedAt)),
      el('td', {title: ss.updatedAt}, when(ss.updatedAt)));
  }

  // readStale reads each session an event named again, and puts its row
  // where the list's order (newest first) has it.
  async function readStale() {
    const ids = [...stale];
    stale = new Set();
    const asked = ask;
    for (const sid of ids) {
      let ss = null;
      try {
        ss = (await api('GET', '/v1/sessions/' + encodeURIComponent(sid))).session;
      } catch (err) {
        if (asked === ask) showError(p.error, err);
        continue;
      }
      if (asked !== ask || !active) return;
      const status = p.status.value;
      const had = rows.findIndex((r) => r.sessionId === ss.sessionId);
      if (had >= 0) rows.splice(had, 1);
      if (!status || ss.status === status) {
        // A session keeps its place; a new one goes where its start has it.
        const at = had >= 0 ? had : rows.findIndex((r) => newestFirst(ss, r) <= 0);
        rows.splice(at < 0 ? rows.length : at, 0, ss);
      }
      const old = p.body.querySelector(`tr[data-id="${CSS.escape(ss.sessionId)}"]`);
      if (old) old.remove();
      if (!status || ss.status === status) {
        const at = rows.findIndex((r) => r.sessionId === ss.sessionId);
        p.body.insertBefore(row(ss), p.body.children[at] || null);
      }
      p.empty.hidden = rows.length > 0;
    }
  }

  const screen = {
    async open() {
      active = true;
      const asked = ++ask;
      try {
        const status = p.status.value;
        const data = await api('GET', '/v1/sessions' + (status ? '?' + new URLSearchParams({status}) : ''));
        if (asked !== ask || !active) return;
        clearError(p.error);
        screen.render(data.sessions || []);
      } catch (err) {
        if (asked !== ask) return;
        p.body.replaceChildren();
        showError(p.error, err);
      }
    },

    close() {
      active = false;
      ask++;
      clearTimeout(timer);
    },

    // update takes an execution's summary from the live stream: when its
    // lifecycle or attention moved, its session's status and runs may
    // have, and that session is read again (a burst of them once).
    update(summary) {
      const now = `${summary.lifecycle}|${summary.attention}`;
      const was = seen.get(summary.id);
      seen.set(summary.id, now);
      if (!active || was === now || !summary.sessionId) return;
      stale.add(summary.sessionId);
      clearTimeout(timer);
      timer = setTimeout(() => readStale(), 300);
    },

    render(list) {
      rows = list.slice();
      p.body.replaceChildren(...rows.map(row));
      p.empty.hidden = rows.length > 0;
    },
  };
  return screen;
}

// newestFirst orders sessions as the list route does: by their first
// run's start, newest first.
function newestFirst(a, b) {
  return (b.startedAt || '').localeCompare(a.startedAt || '');
}
