// The blocked card: why the agent is blocked and what it needs, while the
// state shown says so.
import {parts} from './dom.js';

export function createBlocked(root) {
  const p = parts(root);
  return {
    render(v) {
      const b = v.state.blocked;
      root.hidden = !(b && (b.reason || b.needs));
      if (root.hidden) return;
      p.reason.textContent = b.reason || '(no reason given)';
      p.needs.textContent = b.needs || '';
      p.needsRow.hidden = !b.needs;
    },
  };
}
