// The launch form: an agent of the daemon's catalog (GET /v1/agents), its
// owner (the last one launched for in this browser, at first
// System/console), posture, command line and first prompt.
import {api, agents} from './api.js';
import {el, fill, parts, showError, clearError, mark, unmark} from './dom.js';
import {executionHref} from './format.js';

// The owner of the last launch, offered for the next one.
const OWNER_KEY = 'agentjournal.launchOwner';
const DEFAULT_OWNER = {entity: 'System', id: 'console'};
const OWNER_ENTITIES = ['Task', 'Mission', 'Repository', 'Artifact', 'System'];
const POSTURES = [
  ['', 'structured-headless (default)'],
  ['structured-interactive', 'structured-interactive (with a terminal lane)'],
  ['native-terminal-escape-hatch', 'native-terminal-escape-hatch'],
];

export function createLaunch(root) {
  const p = parts(root);
  fill(p.ownerEntity, OWNER_ENTITIES.map((v) => [v, v]));
  fill(p.posture, POSTURES);
  defaults();
  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    launch();
  });

  // defaults fills in the owner: the last one launched for in this
  // browser, else System/console.
  function defaults() {
    let owner = DEFAULT_OWNER;
    try {
      const kept = JSON.parse(localStorage.getItem(OWNER_KEY) || 'null');
      if (kept && OWNER_ENTITIES.includes(kept.entity) && typeof kept.id === 'string' && kept.id) owner = kept;
    } catch (_) { /* not ours: keep the default */ }
    p.ownerEntity.value = owner.entity;
    p.ownerId.value = owner.id;
  }

  async function launch() {
    clearError(p.error);
    unmark(p.form);
    const body = {ownerEntity: p.ownerEntity.value, ownerId: p.ownerId.value.trim(), agent: p.agent.value};
    try {
      const command = splitCommand(p.command.value);
      if (command.length) body.command = command;
    } catch (e) {
      showError(p.error, {message: e.message, field: 'command'});
      return;
    }
    if (p.prompt.value.trim()) body.prompt = p.prompt.value;
    if (p.posture.value) body.posture = p.posture.value;
    p.submit.disabled = true;
    try {
      const res = await api('POST', '/v1/executions', body);
      localStorage.setItem(OWNER_KEY, JSON.stringify({entity: body.ownerEntity, id: body.ownerId}));
      location.hash = executionHref(res.reference.agentExecutionId);
    } catch (err) {
      showError(p.error, err);
      const field = (err.field || '').split(/[.[]/)[0];
      mark(field && p.form.querySelector(`[data-field="${CSS.escape(field)}"]`));
    } finally {
      p.submit.disabled = false;
    }
  }

  return {
    // open offers the agents of the catalog, keeping the one picked.
    open() {
      const list = agents();
      const key = list.map((a) => a.id).join(',');
      if (p.agent.dataset.key === key) return;
      const picked = p.agent.value;
      p.agent.replaceChildren(...list.map((a) => el('option', {value: a.id, title: `${a.protocol}` +
        (a.nativeResume ? ', resumes its own sessions' : '') + (a.nativeFork ? ', forks them' : '')}, a.id)));
      if (list.some((a) => a.id === picked)) p.agent.value = picked;
      p.agent.dataset.key = key;
    },
  };
}

// splitCommand splits a command line as a shell would: blanks separate
// words, 'single' quotes keep everything, "double" quotes and a bare
// backslash escape the next character.
function splitCommand(line) {
  const words = [];
  let word = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === ' ' || c === '\t' || c === '\n') {
      if (word !== null) words.push(word);
      word = null;
      continue;
    }
    word = word || '';
    if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error("the command line has a ' quote that is not closed");
      word += line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && (line[j + 1] === '"' || line[j + 1] === '\\')) j++;
        word += line[j];
      }
      if (j >= line.length) throw new Error('the command line has a " quote that is not closed');
      i = j;
    } else {
      word += c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}
