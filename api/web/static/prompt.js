// The prompt card: sends the AgentExecution messages the execution's
// protocol descriptor offers, each labelled by its portability, never raw
// terminal input (spec 003); a leading / makes the text a slash command,
// which the daemon completes, previews (a dry run) and carries out.
import {api, execPath} from './api.js';
import {el, parts, showError, clearError} from './dom.js';
import {PORTABILITY, portability} from './format.js';
import {descriptors} from './answer.js';

export function createPrompt(root) {
  const p = parts(root);
  let id = '';
  let state = null; // the live state last drawn
  let commandTimer = null;
  let commandSeq = 0; // the newest preview asked for; older answers are dropped

  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  p.type.addEventListener('change', () => describe());
  p.text.addEventListener('input', () => describe());
  p.text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });

  // message is what the box would send: a leading / makes it a slash
  // command the daemon resolves, otherwise a message of the selected
  // descriptor.
  function message() {
    const raw = p.text.value;
    const m = /^\/([A-Za-z0-9_.:-]+)(?:\s+([\s\S]*))?$/.exec(raw.trim());
    if (m || raw.trim().startsWith('/')) return {type: m ? m[1] : '', text: m ? m[2] || '' : '', slash: true};
    return {type: p.type.value, text: raw, slash: false};
  }

  function describe() {
    const {type, slash} = message();
    const d = slash ? null : descriptors(state).find((m) => m.type === type);
    if (d) {
      p.portability.hidden = false;
      p.portability.className = `badge portability-${d.portability}`;
      p.portability.textContent = portability(d);
      p.delivery.textContent = `delivery ${d.delivery}` + (d.mutatesContext ? ' · changes the context' : '');
      p.desc.textContent = d.description || '';
    } else {
      p.portability.hidden = true;
      p.delivery.textContent = '';
      p.desc.textContent = '';
    }
    // A slash command is the daemon's to resolve: the box asks for its
    // completions and a preview of the typed invocation (a dry run).
    clearTimeout(commandTimer);
    if (!slash) {
      commandSeq++;
      p.completions.replaceChildren();
      p.completions.hidden = true;
      p.preview.textContent = '';
      p.preview.className = 'muted';
      return;
    }
    commandTimer = setTimeout(preview, 120);
  }

  // preview asks the daemon for the completions of the command name typed
  // so far and for the invocation the whole text would be.
  async function preview() {
    const raw = p.text.value.trim();
    const seq = ++commandSeq;
    const base = execPath(id, '/commands');
    const name = raw.split(/\s/, 1)[0];
    const typingName = !/\s/.test(raw);
    try {
      const [list, dry] = await Promise.all([
        typingName ? api('GET', `${base}?prefix=${encodeURIComponent(name)}`) : Promise.resolve(null),
        api('POST', `${base}?dryRun=true`, {text: raw}).then((v) => ({ok: v}), (err) => ({err})),
      ]);
      if (seq !== commandSeq) return; // typed on since
      completions(list ? list.completions : []);
      if (dry.err) {
        p.preview.className = 'muted preview-error';
        p.preview.textContent = dry.err.message || String(dry.err);
        return;
      }
      const inv = dry.ok.invocation;
      p.preview.className = 'muted preview-ok';
      p.preview.replaceChildren(
        el('span', {class: `badge category-${inv.category}`}, inv.category), ' ',
        el('span', {class: `badge portability-${inv.portability}`}, portability(inv)), ' ',
        `${inv.operation}` + (inv.messageType ? ` (${inv.messageType} message)` : '') +
        (inv.records === 'none' ? ' · terminal input, not journaled' : ` · records ${inv.records}`));
    } catch (err) {
      if (seq !== commandSeq) return;
      p.preview.className = 'muted preview-error';
      p.preview.textContent = err.message || String(err);
    }
  }

  // completions lists the commands offered, grouped by portability so
  // adapter-scoped ones stand apart; a click fills the command in.
  function completions(cs) {
    p.completions.hidden = cs.length === 0;
    const groups = new Map();
    for (const c of cs) {
      const key = portability(c);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(c);
    }
    p.completions.replaceChildren(...[...groups].map(([label, items]) => el('li', {class: 'completion-group'},
      el('span', {class: 'completion-group-label muted small'}, label),
      el('ul', {}, items.map((c) => el('li', {
        class: `completion portability-row-${c.portability}`, 'data-command': c.command, 'data-category': c.category,
        'data-portability': c.portability, title: c.description || '',
        onclick: () => {
          p.text.value = `/${c.command} `;
          p.text.focus();
          describe();
        },
      }, el('code', {}, c.inputShape), ' ',
      el('span', {class: `badge category-${c.category}`}, c.category), ' ',
      el('span', {class: `badge portability-${c.portability}`}, portability(c)), ' ',
      el('span', {class: 'muted small'}, c.description || '')))))));
  }

  // send sends what the box holds to the execution open when it was
  // pressed; an answer that comes after another execution was opened is
  // that one's no more, and is not shown in its box.
  async function send() {
    const of = id;
    const {type, text, slash} = message();
    clearError(p.error);
    p.result.textContent = '';
    p.send.disabled = true;
    try {
      if (slash) {
        const res = await api('POST', execPath(of, '/commands'), {text: p.text.value.trim()});
        if (of !== id) return;
        const inv = res.invocation;
        p.text.value = '';
        describe();
        p.result.textContent = `${inv.category} ${inv.operation}: ${res.result.summary}` +
          (res.result.sequence ? ` (journaled at sequence ${res.result.sequence})` : '');
        return;
      }
      const body = {type};
      if (text.trim()) body.payload = {text};
      const ack = await api('POST', execPath(of, '/messages'), body);
      if (of !== id) return;
      p.text.value = '';
      describe();
      p.result.textContent = `${type} message ${ack.messageId} journaled at sequence ${ack.sequence}: ` +
        `${ack.delivery} via ${ack.transport}` + (ack.reason ? ` (${ack.reason})` : '') + (ack.duplicate ? ' (sent before)' : '');
    } catch (err) {
      if (of === id) showError(p.error, err);
    } finally {
      // The next execution's render decides whether it offers anything
      // to send.
      if (of === id) p.send.disabled = false;
    }
  }

  return {
    // open empties the box: a message is typed for one execution, and
    // left on another page it would be sent to whichever is open next.
    open(execution) {
      id = execution;
      p.text.value = '';
      p.result.textContent = '';
      clearError(p.error);
      describe();
    },

    close() {
      id = '';
      state = null;
      clearTimeout(commandTimer);
      commandSeq++;
    },

    // render offers the live execution's messages, grouped by
    // portability, keeping the one selected.
    render(v) {
      state = v.current;
      const offered = descriptors(state).filter((m) => m.type !== 'answer' && m.portability !== 'terminal-only');
      const key = offered.map((m) => m.type).join(',');
      if (p.type.dataset.key !== key) {
        const previous = p.type.value;
        const groups = new Map();
        for (const m of offered) {
          if (!groups.has(m.portability)) groups.set(m.portability, []);
          groups.get(m.portability).push(m);
        }
        p.type.replaceChildren(...[...groups].map(([pt, ms]) => el('optgroup', {label: PORTABILITY[pt] || pt},
          ms.map((m) => el('option', {value: m.type}, `${m.label} — ${portability(m)}`)))));
        if (offered.some((m) => m.type === previous)) p.type.value = previous;
        p.type.dataset.key = key;
      }
      p.send.disabled = offered.length === 0;
      describe();
    },
  };
}
