// The Timeline card of an execution's screen: the chat projection, paged
// back on demand, a fork's inherited items first, the item of the record
// the address names marked; agents' messages rendered from Markdown; an
// open question's choices as buttons; a tool call with its name, target,
// status, duration, error and output (collapsed); and "Fork here" on every
// item, whose form opens inside the item.
//
// Live, the card reads only the newest items (one request) and draws in
// place: an item already shown and unchanged keeps its element, so that
// text selected in it, a click under way and the focus survive; a new item
// is inserted where it belongs, and a changed one (a tool call whose end
// came) replaces its own element only.
import {askImported} from './imported.js';
import {api, agentInfo, execPath} from './api.js';
import {el, parts, showError, clearError, mark, unmark, nearBottom} from './dom.js';
import {executionHref, markdown, when} from './format.js';

const TIMELINE_PAGE = 200;

// TIMELINE_QUERY is the query of the newest page, which the screen reads
// with the state.
export const TIMELINE_QUERY = `?limit=${TIMELINE_PAGE}`;

// NEWEST is how many of the newest items a live update reads: enough to
// hold every item a burst of events adds, and a tool call that started a
// little before and ended now. When more came than that, older pages are
// read until they meet the items held.
const NEWEST = 50;
// KEPT is how many items a live execution's card keeps while the reader
// is at the newest: older ones are let go (and read again with "Show
// older"), so that a page left open on a busy execution for hours holds
// as much as one opened now.
const KEPT = 400;

// createTimeline makes the card. x is the screen: x.view() what it shows,
// x.answer(text, requestId) answers a question, x.canAnswer() whether the
// execution takes an answer now, x.fail(err) shows an error of the screen.
export function createTimeline(root, x) {
  const p = parts(root);
  const f = parts(root.querySelector('[data-card="fork"]'));
  let id = '';
  let items = new Map(); // timeline items by id (a tool call keeps its start's id when its end comes)
  let drawn = new Map(); // the elements shown, by item key: {sig, li}
  let older = null; // the before cursor of the next older page
  let inherited = null; // a fork's items from its parents' prefix, once read
  let target = 0; // the sequence of the record the address opens at, or 0
  let forking = null; // the item the fork form is open on: {executionId, sequence, key}

  // holding is set while a button of the pointer is down in the box: the
  // box does not scroll to new items then, so that what was pressed is
  // still under the pointer when it is released, and the click lands.
  let holding = false;
  p.box.addEventListener('pointerdown', () => {
    holding = true;
  });
  for (const ev of ['pointerup', 'pointercancel']) document.addEventListener(ev, () => {
    holding = false;
  });

  p.older.addEventListener('click', () => card.loadOlder());
  f.root.addEventListener('submit', (e) => {
    e.preventDefault();
    submitFork();
  });
  f.cancel.addEventListener('click', () => closeFork(true));
  f.root.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      closeFork(true);
    }
  });

  // shown is the items the view shows: the replayed ones while it
  // travels back, else the live ones, a fork's inherited items first once
  // its own are all loaded.
  function shown(v) {
    if (!v.live) return v.state.timeline || [];
    const own = [...items.values()].sort((a, b) => a.sequence - b.sequence || String(a.id).localeCompare(String(b.id)));
    return (older === null && inherited ? inherited : []).concat(own);
  }

  // targetSeq is the sequence of the item that stands for the record the
  // view was opened at: its own, else the first one after it.
  function targetSeq(v) {
    if (!target || !v.live) return 0;
    let best = 0;
    for (const it of items.values()) if (it.sequence >= target && (!best || it.sequence < best)) best = it.sequence;
    return best;
  }

  // draw draws the items; live says whether they are the live ones (an
  // open question's choices answer it, older pages can be read).
  function draw(live) {
    const v = x.view();
    if (!v) return;
    const list = shown(v);
    const atBottom = nearBottom(p.box, 40);
    const open = live ? v.current.currentInputRequestId : '';
    // The fork form lives in its item: drawing the items again moves it
    // to the new one, keeping what was typed and where the focus was.
    const focused = f.root.contains(document.activeElement) ? document.activeElement : null;
    const caret = focused && focused.tagName === 'INPUT' ? [focused.selectionStart, focused.selectionEnd] : null;
    const marked = targetSeq(v);
    const answerable = x.canAnswer();
    const next = new Map();
    for (const it of list) {
      const key = keyOf(it);
      const label = it.kind === 'needs-input' && open && it.requestId === open ? 'open' : '';
      // Everything the element shows: an item drawn the same way again
      // keeps its element. Whether the fork form is open on it is not
      // part of it: the form and its button's aria-expanded change in
      // place (placeFork), so that opening or closing the form does not
      // drop text selected in the item.
      const sig = JSON.stringify(it) + `|${label}|${!!label && answerable}|${!it.inherited && it.sequence === marked}`;
      const had = drawn.get(key);
      next.set(key, had && had.sig === sig ? had : {sig, li: item(it, open, marked, answerable)});
    }
    place(next);
    p.older.hidden = !live || older === null;
    placeFork();
    if (focused && f.root.contains(focused)) {
      focused.focus({preventScroll: true});
      if (caret) focused.setSelectionRange(...caret);
    }
    if (!forking && !marked && !holding && (atBottom || !live)) p.box.scrollTop = p.box.scrollHeight;
  }

  // place makes the list show the elements of next, in its order, moving
  // and removing only what changed.
  function place(next) {
    for (const [key, d] of drawn) if (next.get(key) !== d) d.li.remove();
    for (const li of [...p.list.children]) if (!li.dataset.key) li.remove();
    let at = p.list.firstElementChild;
    for (const d of next.values()) {
      if (d.li === at) {
        at = at.nextElementSibling;
        continue;
      }
      p.list.insertBefore(d.li, at);
    }
    drawn = next;
    if (!next.size) p.list.append(el('li', {class: 'muted'}, 'No timeline items yet.'));
  }

  // keyOf names an item among those shown: an inherited one is its
  // parent's record.
  function keyOf(it) {
    const holder = it.inherited && it.executionId ? it.executionId : id;
    return `${holder}:${it.id || it.sequence}`;
  }

  function item(it, open, marked, answerable) {
    const meta = [];
    if (it.source) meta.push(it.source);
    if (it.messageType) meta.push('type ' + it.messageType);
    if (it.requestId) meta.push('request ' + it.requestId);
    if (it.action) meta.push(it.action);
    if (it.messageId) meta.push(it.messageId);
    const label = it.kind === 'needs-input' && it.requestId === open && open ? 'open' : '';
    // An inherited item is its parent's record: a fork from it branches
    // off that execution, after that sequence.
    const holder = it.inherited && it.executionId ? it.executionId : id;
    const key = keyOf(it);
    const targeted = !it.inherited && it.sequence === marked;
    return el('li', {class: `item kind-${it.kind}` + (it.source === 'operator' ? ' from-operator' : '') + (it.inherited ? ' inherited' : '') + (targeted ? ' target' : ''),
      'data-seq': it.sequence, 'data-kind': it.kind, 'data-execution': holder, 'data-key': key, 'data-target': targeted ? target : null},
      el('div', {class: 'item-head'},
        el('span', {class: 'seq'}, '#' + it.sequence),
        el('span', {class: 'kind'}, it.kind.replace(/-/g, ' ')),
        label && el('span', {class: 'badge attention-awaiting-operator'}, label),
        it.inherited && el('a', {class: 'from', href: executionHref(holder), title: 'inherited from the parent\'s prefix'}, 'from ' + holder),
        el('time', {datetime: it.at, title: it.at}, when(it.at)),
        el('button', {type: 'button', class: 'fork-here quiet', title: `Fork a new execution after record #${it.sequence} of ${holder}`,
          'aria-label': `Fork here: after record #${it.sequence} of ${holder}`, 'aria-expanded': forking && forking.key === key ? 'true' : 'false',
          onclick: () => openFork(holder, it.sequence, key)}, 'Fork here')),
      it.kind === 'chat' ? markdown(it.text) : it.kind === 'tool' ? toolOf(it) : el('div', {class: 'item-text'}, it.text),
      detailOf('Reason', it.reason !== it.text && it.reason),
      detailOf('Needs', it.needs),
      choicesOf(it, label === 'open' && answerable),
      meta.length ? el('div', {class: 'item-meta muted'}, meta.join(' · ')) : null);
  }

  // choicesOf shows a question's choices: buttons that answer with one
  // while the request is open, else the list.
  function choicesOf(it, open) {
    if (!it.choices || !it.choices.length) return null;
    if (!open) return el('div', {class: 'item-detail muted'}, 'Choices: ' + it.choices.join(' / '));
    return el('div', {class: 'choices'}, it.choices.map((c) =>
      el('button', {type: 'button', class: 'choice', onclick: () => x.answer(c, it.requestId)}, c)));
  }

  // ---- fork here ----

  // openFork opens the fork form on an item: a fork of execution after its
  // record at sequence.
  function openFork(executionId, sequence, key) {
    if (forking && forking.key === key) {
      closeFork(true);
      return;
    }
    forking = {executionId, sequence, key};
    f.target.textContent = `A new execution that branches off ${executionId} after record #${sequence}.`;
    f.workspace.value = 'keep';
    f.prompt.value = '';
    unmark(f.root);
    clearError(f.error);
    const v = x.view();
    const agent = v ? v.current.agentId : '';
    const native = agentInfo(agent).nativeFork;
    f.prompt.placeholder = native ? 'optional: sent after the forked session' : 'required: it follows the retelling';
    f.note.textContent = native
      ? `${agent} forks its own session at the point; with no assistant message before it, the history is retold and a prompt is needed.`
      : `${agent || 'This agent'} cannot fork its session: the new one gets the conversation up to the point retold from the journal, then this prompt.`;
    draw(v && v.live);
    f.prompt.focus();
  }

  // closeFork closes the fork form and empties it, so that nothing typed
  // or refused for one item is shown for another; back gives the focus to
  // the item's button, as a keyboard user left it.
  function closeFork(back) {
    const was = forking;
    forking = null;
    f.root.hidden = true;
    p.box.after(f.root);
    f.prompt.value = '';
    unmark(f.root);
    clearError(f.error);
    if (!was) return;
    const li = forkItem(was.key);
    const button = li && li.querySelector('.fork-here');
    if (button) button.setAttribute('aria-expanded', 'false');
    if (back && button) button.focus();
  }

  function forkItem(key) {
    return [...p.list.children].find((li) => li.dataset.key === key) || null;
  }

  // placeFork says on each item's button whether the fork form is open on
  // it, and puts the open form in its item, or closes it when the item is
  // no longer shown (time travel to before it).
  function placeFork() {
    for (const [key, d] of drawn) {
      const button = d.li.querySelector('.fork-here');
      const expanded = String(!!forking && forking.key === key);
      if (button && button.getAttribute('aria-expanded') !== expanded) button.setAttribute('aria-expanded', expanded);
    }
    if (!forking) return;
    const li = forkItem(forking.key);
    if (!li) {
      closeFork(false);
      return;
    }
    li.append(f.root);
    f.root.hidden = false;
  }

  // submitFork asks for the fork; confirm restates an imported
  // journal's command and directory once the user has seen them.
  async function submitFork(confirm) {
    const at = forking;
    if (!at) return;
    clearError(f.error);
    unmark(f.root);
    const body = {at: at.sequence, workspace: f.workspace.value};
    if (f.prompt.value.trim()) body.prompt = f.prompt.value;
    if (confirm) body.confirmImported = confirm;
    f.submit.disabled = true;
    try {
      const res = await api('POST', execPath(at.executionId, '/fork'), body);
      if (forking === at) closeFork(false);
      location.hash = executionHref(res.reference.agentExecutionId);
    } catch (err) {
      if (forking !== at) return;
      if (err.imported && !confirm) {
        askImported(f.error, err, (c) => submitFork(c));
        return;
      }
      showError(f.error, err);
      mark({workspace: f.workspace, prompt: f.prompt}[err.field]);
    } finally {
      f.submit.disabled = false;
    }
  }

  // loadInherited reads a fork's inherited items: the timeline route
  // pages a fork's own items only, and the replay folds the parents'
  // prefix in at the fork's header. The prefix never changes.
  async function loadInherited() {
    const of = id;
    inherited = [];
    try {
      const data = await api('GET', execPath(of, '/replay?toSeq=1&limit=0'));
      if (of !== id) return;
      inherited = (data.state.timeline || []).filter((it) => it.inherited);
      x.render();
    } catch (err) {
      if (of !== id) return;
      inherited = null;
      x.fail(err);
    }
  }

  // trim lets the oldest items go beyond KEPT, unless the reader is away
  // from the newest, a fork form is open or the address marks an item.
  function trim() {
    if (items.size <= KEPT + NEWEST || forking || target || !nearBottom(p.box, 40)) return;
    const byAge = [...items.entries()].sort((a, b) => a[1].sequence - b[1].sequence);
    const drop = byAge.slice(0, byAge.length - KEPT);
    for (const [k] of drop) items.delete(k);
    // The next older page ends below the oldest item kept.
    older = byAge[drop.length][1].sequence;
  }

  const card = {
    open(execution) {
      id = execution;
      items = new Map();
      drawn = new Map();
      older = null;
      inherited = null;
      p.list.replaceChildren();
      closeFork(false);
    },

    // close closes the fork form too: it is a form of the execution left,
    // whose items are no longer shown.
    close() {
      id = '';
      target = 0;
      closeFork(false);
    },

    // take adds a page of items read with the state (its first read sets
    // the cursor of older pages), and reads a fork's inherited ones once.
    take(page, state) {
      if (state.forkedFrom && inherited === null) loadInherited();
      for (const it of page.items) items.set(it.id || it.sequence, it);
      if (older === null && page.next !== null) older = page.next;
    },

    // update reads the newest items, live: one request, unless more items
    // came than it holds; then older pages until they meet the ones held.
    async update() {
      const of = id;
      let newest = 0;
      for (const it of items.values()) newest = Math.max(newest, it.sequence);
      let page = await api('GET', execPath(of, `/timeline?limit=${NEWEST}`));
      for (;;) {
        if (of !== id) return;
        for (const it of page.items) items.set(it.id || it.sequence, it);
        // A page is newest first.
        const oldest = page.items.length ? page.items[page.items.length - 1].sequence : 0;
        if (page.next === null || !oldest || oldest <= newest) break;
        page = await api('GET', execPath(of, `/timeline?limit=${TIMELINE_PAGE}&before=${page.next}`));
      }
      if (older === null && !newest && page.next !== null) older = page.next;
      trim();
    },

    // target marks the item of record seq (0 for none) when next drawn.
    target(seq) {
      target = seq;
    },

    render(v) {
      draw(v.live);
    },

    async loadOlder() {
      if (older === null) return;
      const of = id;
      try {
        const page = await api('GET', execPath(of, `/timeline?limit=${TIMELINE_PAGE}&before=${older}`));
        if (of !== id) return;
        for (const it of page.items) items.set(it.id || it.sequence, it);
        older = page.next;
        draw(false);
      } catch (err) {
        x.fail(err);
      }
    },

    // reveal brings the item of a record into view, marked: older pages
    // are read until it is loaded. A record with no item of its own is
    // shown by the first item after it.
    async reveal(seq) {
      const of = id;
      const loaded = () => [...items.values()].some((it) => it.sequence <= seq);
      while (of === id && target === seq && older !== null && !loaded()) {
        const before = older;
        await card.loadOlder();
        if (older === before) return;
      }
      if (of !== id || target !== seq) return;
      const li = p.list.querySelector('li.item[data-target]');
      if (li) li.scrollIntoView({block: 'center'});
    },
  };
  return card;
}

// toolOf shows a tool call: its name and target, status, duration, exit
// code and error, and its output excerpt behind a disclosure, closed. A
// field the item lacks is left out: a call still running has no duration
// or output, and an agent's stream may carry none of them.
function toolOf(it) {
  const t = it.tool && typeof it.tool === 'object' ? {...it, ...it.tool} : it;
  const name = t.name || t.toolName || '';
  // The target is an object (kind, label, path); older items carried
  // a plain string.
  const target = (t.target && typeof t.target === 'object' ? t.target.label || t.target.path : t.target) || t.title || '';
  const ms = Number(t.durationMs);
  const facts = [
    t.status && el('span', {class: `badge tool-${t.status}`, 'data-status': t.status}, t.status),
    Number.isFinite(ms) && t.durationMs !== undefined ? el('span', {class: 'tool-duration muted'}, duration(ms)) : null,
    t.exitCode !== undefined && t.exitCode !== null ? el('span', {class: 'tool-exit muted'}, `exit ${t.exitCode}`) : null,
  ];
  const output = t.output
    ? el('details', {class: 'tool-output'},
      el('summary', {}, 'Output' + (t.outputBytes ? ` (excerpt of ${t.outputBytes} bytes)` : '')),
      el('pre', {}, t.output))
    : null;
  return el('div', {class: 'item-text tool-call'},
    el('div', {class: 'tool-head'}, name ? el('code', {class: 'tool-name'}, name) : null,
      target ? el('span', {class: 'tool-target'}, ' ', target) : null, ' ', ...facts),
    !name && it.text ? el('div', {}, it.text) : null,
    t.error ? el('div', {class: 'item-detail tool-error'}, el('b', {}, 'Error: '), t.error) : null,
    output);
}

// duration words milliseconds: 850 ms, 4.2 s, 3 min 5 s.
function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// detailOf is a labelled line of a timeline item, or nothing.
function detailOf(label, value) {
  return value ? el('div', {class: 'item-detail'}, el('b', {}, label + ': '), value) : null;
}
