// The sessions screen: every session, or those of one status, newest
// first, read again on the executions' live events.
import {api} from './api.js';
import {el, fill, parts, badge, showError, clearError} from './dom.js';
import {SESSION_STATUSES, anyOf, sessionHref, when} from './format.js';

export function createSessions(root) {
  const p = parts(root);
  let active = false;
  let timer = null;
  let ask = 0;

  fill(p.status, anyOf(SESSION_STATUSES));
  p.status.addEventListener('change', () => screen.open());
  p.filters.addEventListener('submit', (e) => {
    e.preventDefault();
    screen.open();
  });

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
      clearTimeout(timer);
    },

    // refresh reads the list again after an execution's event: its
    // session's status and runs follow its executions.
    refresh() {
      if (!active) return;
      clearTimeout(timer);
      timer = setTimeout(() => screen.open(), 300);
    },

    render(list) {
      p.body.replaceChildren(...list.map((ss) => el('tr', {'data-id': ss.sessionId, 'data-status': ss.status},
        el('td', {}, el('a', {href: sessionHref(ss.sessionId)}, ss.sessionId)),
        el('td', {}, badge(ss.status, 'session')),
        el('td', {}, ss.agentId || '—'),
        el('td', {}, ss.productId || '—'),
        el('td', {}, ss.userId || '—'),
        el('td', {}, String((ss.runIds || []).length)),
        el('td', {}, ss.resumable ? 'yes' : 'no'),
        el('td', {title: ss.startedAt}, when(ss.startedAt)),
        el('td', {title: ss.updatedAt}, when(ss.updatedAt)))));
      p.empty.hidden = list.length > 0;
    },
  };
  return screen;
}
