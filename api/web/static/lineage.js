// The Lineage card: the fork tree from the root, the open execution marked,
// the forks and resumes below it, each entry opening its execution.
import {api, execPath} from './api.js';
import {el, parts, showError, clearError} from './dom.js';
import {executionHref, linkOf} from './format.js';

// createLineage makes the card; x.view() is what the screen shows.
export function createLineage(root, x) {
  const p = parts(root);
  let id = '';
  let lineage = null; // {data: the lineage route's answer, links: Map id → linkOf}
  let ask = 0; // the newest read asked for
  let timer = null;

  // draw draws the fork tree from the root: the ancestors down to this
  // execution, marked, and the forks and resumes below it; an execution
  // that derives from none and has none is left without it.
  function draw() {
    const lin = lineage && lineage.data;
    if (!lin || !lin.tree) return;
    const links = lineage.links;
    const v = x.view();
    links.set(lin.executionId, linkOf(v && v.current));
    const above = new Set(lin.ancestors.map((s) => s.executionId));
    const node = (n, below) => {
      const role = n.current ? 'current' : above.has(n.executionId) ? 'ancestor' : below ? 'descendant' : 'branch';
      const l = links.get(n.executionId);
      let how = '';
      if (n.relation === 'fork') how = `forked at #${n.sequence}`;
      else if (n.relation === 'resume') how = 'resumed';
      if (how && l && l.history) how += ` · history ${l.history}`;
      return el('li', {class: `lin-node lin-${role}`, 'data-id': n.executionId, 'data-role': role},
        el('div', {class: 'lin-entry'},
          el('a', {href: executionHref(n.executionId), 'aria-current': n.current ? 'page' : null}, n.executionId),
          how && el('span', {class: 'lin-how muted'}, how),
          n.current && el('span', {class: 'badge lin-here'}, 'this execution'),
          role === 'ancestor' && el('span', {class: 'lin-role muted'}, n.executionId === lin.root ? 'root' : 'ancestor')),
        n.children.length ? el('ul', {}, n.children.map((c) => node(c, below || n.current))) : null);
    };
    p.tree.replaceChildren(node(lin.tree, false));
    root.dataset.execution = lin.executionId;
    const alone = !lin.ancestors.length && !lin.tree.children.length;
    root.hidden = alone && p.error.hidden;
  }

  const card = {
    open(execution) {
      id = execution;
      lineage = null;
      root.hidden = true;
      p.tree.replaceChildren();
      clearError(p.error);
    },

    close() {
      id = '';
      ask++;
      clearTimeout(timer);
    },

    // refresh reads the execution's fork tree, and the link of each
    // execution between it and the root: how each derives from the one
    // above, with its history, is in its own header.
    async refresh() {
      const of = id;
      const asked = ++ask;
      try {
        const lin = await api('GET', execPath(of, '/lineage'));
        const between = lin.ancestors.slice(0, -1).map((s) => s.executionId);
        const states = await Promise.all(between.map((a) => api('GET', execPath(a)).catch(() => null)));
        if (asked !== ask || of !== id) return;
        const links = new Map();
        states.forEach((st, i) => links.set(between[i], linkOf(st)));
        lineage = {data: lin, links};
        clearError(p.error);
        draw();
      } catch (err) {
        if (asked !== ask || of !== id) return;
        root.hidden = false;
        showError(p.error, err);
      }
    },

    // changed reads the tree again soon: a new execution may be a fork or
    // a resume in it.
    changed() {
      clearTimeout(timer);
      timer = setTimeout(() => card.refresh(), 300);
    },
  };
  return card;
}
