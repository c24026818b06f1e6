// The hosts screen: every daemon on the log as a host of the fleet, as
// the daemon serving the console sees it (GET /v1/hosts): whether it is
// live, lost or left, when it was last heard from, its load against its
// limit, its free memory, its labels and the executions running there.
// Hosts have no event of their own: the screen reads them again every
// few seconds while it is shown.
import {loadHosts} from './api.js';
import {el, parts, badge, showError, clearError} from './dom.js';
import {ago, bytes, executionHref, when} from './format.js';

// POLL_MS is how often the screen reads the hosts again: a host beats
// every fifth of its lease (2 s by default), so a newer read would seldom
// show more.
const POLL_MS = 2000;

export function createHosts(root) {
  const p = parts(root);
  let active = false;
  let timer = null;
  let ask = 0;

  // next reads the hosts again after POLL_MS, once the last read ended:
  // a slow daemon is not asked again before it answered.
  function next() {
    clearTimeout(timer);
    if (active) timer = setTimeout(() => screen.refresh(), POLL_MS);
  }

  const screen = {
    open() {
      active = true;
      screen.refresh();
    },

    close() {
      active = false;
      ask++;
      clearTimeout(timer);
    },

    async refresh() {
      if (!active) return;
      const asked = ++ask;
      try {
        const data = await loadHosts();
        if (asked !== ask) return;
        clearError(p.error);
        screen.render(data);
      } catch (err) {
        if (asked !== ask) return;
        p.body.replaceChildren();
        p.info.textContent = '';
        showError(p.error, err);
      }
      if (asked === ask) next();
    },

    // render draws the hosts of data ({self, hosts, answered}), how long
    // ago each was heard from by the answering daemon's clock.
    render(data) {
      const counts = {live: 0, lost: 0, left: 0};
      for (const h of data.hosts) counts[h.state] = (counts[h.state] || 0) + 1;
      p.info.textContent = `${data.hosts.length} ${data.hosts.length === 1 ? 'host' : 'hosts'} as host ${data.self} sees them: ` +
        `${counts.live} live, ${counts.lost} lost, ${counts.left} left.`;
      p.body.replaceChildren(...data.hosts.map((h) => {
        const running = h.executions || [];
        const labels = Object.entries(h.labels || {}).sort(([a], [b]) => a.localeCompare(b));
        return el('tr', {class: `host-row row-${h.state}`, 'data-host': h.name, 'data-state': h.state},
          el('td', {class: 'host-name'}, el('code', {}, h.name), h.self ? [' ', el('span', {class: 'badge host-self'}, 'this daemon')] : null),
          el('td', {}, badge(h.state, 'host')),
          el('td', {class: 'host-heard', title: `${h.lastHeard} (lease ${h.leaseMs / 1000} s)`}, ago(Date.parse(h.lastHeard), data.answered)),
          el('td', {class: 'host-load'}, `${h.running} / ${h.maxRunning}`),
          el('td', {class: 'host-queued'}, String(h.queued)),
          el('td', {class: 'host-memory'}, h.memoryTotal ? `${bytes(h.memoryFree)} of ${bytes(h.memoryTotal)}` : '—'),
          el('td', {class: 'host-labels'}, labels.length ? labels.map(([k, v]) => el('span', {class: 'label'}, `${k}=${v}`)) : '—'),
          el('td', {class: 'host-executions', title: h.state === 'live' ? null : 'as of its last heartbeat'},
            running.length ? running.map((id) => el('a', {href: executionHref(id), 'data-id': id}, id)) : '—'),
          el('td', {title: h.started}, when(h.started)));
      }));
    },
  };
  return screen;
}
