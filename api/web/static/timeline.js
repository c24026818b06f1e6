// The Timeline card of an execution's screen: the chat projection, paged
// back on demand, a fork's inherited items first, the item of the record
// the address names marked; agents' messages rendered from Markdown; an
// open question's choices as buttons; and "Fork here" on every item, whose
// form opens inside the item.
import {api, agentInfo, execPath} from './api.js';
import {el, parts, showError, clearError, mark, unmark, nearBottom} from './dom.js';
import {executionHref, markdown, when} from './format.js';

const TIMELINE_PAGE = 200;

// TIMELINE_QUERY is the query of the newest page, which the screen reads
// with the state.
export const TIMELINE_QUERY = `?limit=${TIMELINE_PAGE}`;

// createTimeline makes the card. x is the screen: x.view() what it shows,
// x.answer(text, requestId) answers a question, x.canAnswer() whether the
// execution takes an answer now, x.fail(err) shows an error of the screen.
export function createTimeline(root, x) {
  const p = parts(root);
  const f = parts(root.querySelector('[data-card="fork"]'));
  let id = '';
  let items = new Map(); // timeline items by sequence
  let older = null; // the before cursor of the next older page
  let inherited = null; // a fork's items from its parents' prefix, once read
  let target = 0; // the sequence of the record the address opens at, or 0
  let forking = null; // the item the fork form is open on: {executionId, sequence, key}

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
    const own = [...items.values()].sort((a, b) => a.sequence - b.sequence);
    return (older === null && inherited ? inherited : []).concat(own);
  }

  // targetSeq is the sequence of the item that stands for the record the
  // view was opened at: its own, else the first one after it.
  function targetSeq(v) {
    if (!target || !v.live) return 0;
    let best = 0;
    for (const s of items.keys()) if (s >= target && (!best || s < best)) best = s;
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
    p.list.replaceChildren(...list.map((it) => item(it, open, marked)));
    p.older.hidden = !live || older === null;
    if (!list.length) p.list.append(el('li', {class: 'muted'}, 'No timeline items yet.'));
    placeFork();
    if (focused && f.root.contains(focused)) {
      focused.focus({preventScroll: true});
      if (caret) focused.setSelectionRange(...caret);
    }
    if (!forking && !marked && (atBottom || !live)) p.box.scrollTop = p.box.scrollHeight;
  }

  function item(it, open, marked) {
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
    const key = `${holder}:${it.sequence}:${it.id}`;
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
      it.kind === 'chat' ? markdown(it.text) : el('div', {class: 'item-text'}, it.text),
      detailOf('Reason', it.reason !== it.text && it.reason),
      detailOf('Needs', it.needs),
      choicesOf(it, label === 'open' && x.canAnswer()),
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

  // placeFork puts the open fork form in its item, or closes it when the
  // item is no longer shown (time travel to before it).
  function placeFork() {
    if (!forking) return;
    const li = forkItem(forking.key);
    if (!li) {
      closeFork(false);
      return;
    }
    li.append(f.root);
    f.root.hidden = false;
  }

  async function submitFork() {
    const at = forking;
    if (!at) return;
    clearError(f.error);
    unmark(f.root);
    const body = {at: at.sequence, workspace: f.workspace.value};
    if (f.prompt.value.trim()) body.prompt = f.prompt.value;
    f.submit.disabled = true;
    try {
      const res = await api('POST', execPath(at.executionId, '/fork'), body);
      if (forking === at) closeFork(false);
      location.hash = executionHref(res.reference.agentExecutionId);
    } catch (err) {
      if (forking !== at) return;
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

  const card = {
    open(execution) {
      id = execution;
      items = new Map();
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
      for (const it of page.items) items.set(it.sequence, it);
      if (older === null && page.next !== null) older = page.next;
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
        for (const it of page.items) items.set(it.sequence, it);
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
      const loaded = () => [...items.keys()].some((s) => s <= seq);
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

// detailOf is a labelled line of a timeline item, or nothing.
function detailOf(label, value) {
  return value ? el('div', {class: 'item-detail'}, el('b', {}, label + ': '), value) : null;
}
