// The launch form: an agent of the daemon's catalog (GET /v1/agents), its
// owner (the last one launched for in this browser, at first
// System/console), posture, where in the fleet it runs (a live host of
// GET /v1/hosts, labels the host must have, an environment profile one of
// them offers), command line and first prompt; after a launch, the host
// that took it.
import {HOST_HEADER, agents, loadHosts, request} from './api.js';
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
  // A host's load changes while the form waits: the choices are read
  // again as one is about to be made.
  for (const select of [p.host, p.profile]) select.addEventListener('focus', () => readHosts());
  let asked = 0;

  // readHosts offers the live hosts and the environment profiles they
  // have, keeping what was picked. Hosts that cannot be read leave "any
  // host" and no profile, and say why on the choices: a launch without a
  // placement needs none of it.
  async function readHosts() {
    const ask = ++asked;
    let live = [];
    let why = null;
    try {
      live = (await loadHosts()).hosts.filter((h) => h.state === 'live');
    } catch (err) {
      why = `The hosts could not be read: ${err.message}`;
    }
    if (ask !== asked) return;
    p.host.title = p.profile.title = why || '';
    offer(p.host, [['', 'any host'], ...live.map((h) => [h.name, hostLine(h)])], 'no longer live');
    const profiles = new Map();
    for (const h of live) for (const name of h.profiles || []) profiles.set(name, [...(profiles.get(name) || []), h.name]);
    const names = [...profiles.keys()].sort((a, b) => a.localeCompare(b));
    offer(p.profile, [['', 'none'], ...names.map((n) => [n, `${n} (${profiles.get(n).join(', ')})`])], 'no live host has it');
  }

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
    p.result.hidden = true;
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
    const placement = {};
    if (p.host.value) placement.host = p.host.value;
    try {
      const on = parseLabels(p.labels.value);
      if (Object.keys(on).length) placement.on = on;
    } catch (e) {
      refused({message: e.message, field: 'placement.on'});
      return;
    }
    if (Object.keys(placement).length) body.placement = placement;
    if (p.profile.value) body.envProfile = p.profile.value;
    p.submit.disabled = true;
    try {
      const resp = await request('POST', '/v1/executions', body);
      const res = JSON.parse(await resp.text());
      localStorage.setItem(OWNER_KEY, JSON.stringify({entity: body.ownerEntity, id: body.ownerId}));
      started(res.reference.agentExecutionId, (res.state && res.state.host) || resp.headers.get(HOST_HEADER) || '');
      location.hash = executionHref(res.reference.agentExecutionId);
    } catch (err) {
      refused(err);
    } finally {
      p.submit.disabled = false;
    }
  }

  // refused shows why a launch was not made and marks the field at fault:
  // the control of the field named (placement.on), else of its head.
  function refused(err) {
    showError(p.error, err);
    const field = err.field || '';
    const control = (f) => f && p.form.querySelector(`[data-field="${CSS.escape(f)}"]`);
    mark(control(field) || control(field.split(/[.[]/)[0]));
  }

  // started says which execution the last launch made and the host that
  // took it, which placement may have chosen among several.
  function started(id, host) {
    p.result.replaceChildren('Started ', el('a', {href: executionHref(id), 'data-id': id}, id),
      ...(host ? [' on ', el('b', {class: 'started-host'}, host)] : []), '.');
    p.result.dataset.host = host;
    p.result.hidden = false;
  }

  return {
    // open offers the agents of the catalog, keeping the one picked, and
    // the hosts as they are now.
    open() {
      readHosts();
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

// hostLine is a host as the host choice offers it: its name and load.
function hostLine(h) {
  return `${h.name}${h.self ? ' (this daemon)' : ''} — ${h.running} / ${h.maxRunning} running` +
    (h.queued ? `, ${h.queued} queued` : '');
}

// offer replaces a select's options with [value, label] pairs, keeping the
// value picked: one no longer offered stays, labelled gone, so that a
// choice is never changed behind the operator's back. Options as they are
// are left alone: a list being opened is not redrawn under the pointer.
function offer(select, options, gone) {
  const picked = select.value;
  if (picked && !options.some(([value]) => value === picked)) options.push([picked, `${picked} (${gone})`]);
  const key = JSON.stringify(options);
  if (select.dataset.key === key) return;
  fill(select, options);
  select.value = picked;
  select.dataset.key = key;
}

// LABEL_KEY and the limits below are the fleet's rules for a label
// (fleet.ParseLabel), checked here to say what is wrong before asking.
const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const LABEL_KEY_MAX = 63;
const LABEL_VALUE_MAX = 255;

// parseLabels reads the labels a host must have: key=value words, split as
// the command line is, so that a value may hold blanks when quoted.
function parseLabels(text) {
  const on = {};
  for (const word of splitCommand(text)) {
    const at = word.indexOf('=');
    const key = at < 0 ? word : word.slice(0, at);
    const value = at < 0 ? '' : word.slice(at + 1);
    if (at < 0 || !LABEL_KEY.test(key) || key.length > LABEL_KEY_MAX ||
        new TextEncoder().encode(value).length > LABEL_VALUE_MAX || /[\n\r\0]/.test(value)) {
      throw new Error(`label ${JSON.stringify(word)}: want key=value, the key 1 to ${LABEL_KEY_MAX} of [A-Za-z0-9_.-] ` +
        `(e.g. gpu=1, os=linux), the value one line of at most ${LABEL_VALUE_MAX} bytes`);
    }
    if (Object.hasOwn(on, key) && on[key] !== value) throw new Error(`label ${key} is given twice, as ${key}=${on[key]} and ${key}=${value}: want one value for each key`);
    on[key] = value;
  }
  return on;
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
