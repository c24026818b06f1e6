// The agentjournal operator console: a client of the daemon's API. It
// reads executions, their timelines and journals, sends AgentExecution
// messages, and follows the live event stream. Every error the API answers
// is shown with its message, field and accepted values.
//
// This is the entry module: it signs in, follows the live event stream,
// and shows the screen the address names. Native ES modules, no build
// step. Beside it: api.js (calls, the token, the event stream, the agent
// catalog, the fleet's hosts), dom.js (elements, parts, errors),
// format.js (the daemon's vocabulary, times, links, Markdown), ansi.js
// (the colours of plain output), one module
// per screen (login, list with launch, execution, search, sessions,
// session, hosts, the approvals inbox) and one per
// card of the execution screen. Three vendored libraries are loaded
// before it as classic scripts (vendor/README.md): xterm.js
// (window.Terminal) for terminal lanes, marked and DOMPurify for agents'
// Markdown.
//
// Every screen and card has the same shape. create<Name>(root) makes it
// from its root element in the page (data-view for a screen, data-card
// for a card), whose elements it finds once, by their data-part, inside
// that root only; then
//   open(…)     shows it for its subject (the address's, or the open
//               execution), forgetting what it showed of the last one;
//   close()     lets the subject go: timers, streams and answers still
//               under way are stopped or dropped;
//   refresh()   reads from the daemon what it shows, again;
//   render(…)   draws what it holds, without a request.
// A screen or card leaves out those it has no use for.
import {
  EVENT_NAMES, api, forgetToken, keepToken, loadAgents, loadHosts, onUnauthorized, openEvents, signedIn, storedToken,
  TOKEN_KEY, tokenFromAddress, useToken,
} from './api.js';
import {el, describe, parts} from './dom.js';
import {createLogin} from './login.js';
import {createList} from './list.js';
import {createExecution} from './execution.js';
import {createSearch} from './search.js';
import {createSessions} from './sessions.js';
import {createSession} from './session.js';
import {createHosts} from './hosts.js';
import {createInbox} from './inbox.js';

const page = parts(document.querySelector('[data-view="page"]'));

// xterm.js writes its colours and cell sizes into <style> elements. The
// page's policy admits only those that carry the nonce of this page's
// response (given on the stylesheet link), and only when it is there
// before the element is inserted: so every <style> gets it when created.
const styleNonce = page.styles.nonce;
if (styleNonce) {
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function createElement(name, options) {
    const e = create.call(this, name, options);
    if (String(name).toLowerCase() === 'style') e.setAttribute('nonce', styleNonce);
    return e;
  };
}

const view = (name) => document.querySelector(`[data-view="${name}"]`);
const login = createLogin(view('login'), (token) => signIn(token).catch((err) => showLogin(err)));
const list = createList(view('list'));
const execution = createExecution(view('execution'));
const search = createSearch(view('search'));
const sessions = createSessions(view('sessions'));
const session = createSession(view('session'));
const hosts = createHosts(view('hosts'));
const inbox = createInbox(view('inbox'), (n) => {
  page.approvals.textContent = String(n);
  page.approvals.hidden = n === 0;
  page.approvals.title = `${n} open request${n === 1 ? '' : 's'}`;
});
const SCREENS = ['login', 'list', 'execution', 'search', 'sessions', 'session', 'hosts', 'inbox'];

function show(name) {
  for (const s of SCREENS) view(s).hidden = s !== name;
}

// reportError shows an error that belongs to no form in the page-wide
// list, until the person dismisses it.
function reportError(what, err) {
  const item = el('div', {class: 'error-box'}, el('p', {class: 'error-what'}, what));
  item.append(describe(err), el('button', {type: 'button', class: 'quiet', onclick: () => item.remove()}, 'Dismiss'));
  page.errors.append(item);
  while (page.errors.children.length > 5) page.errors.firstElementChild.remove();
}

// ---- sign-in ----

function showLogin(err) {
  // The hosts screen reads on a timer: signed out, it would be refused
  // again and again.
  hosts.close();
  show('login');
  page.signout.hidden = true;
  login.open(err);
}

async function signIn(candidate) {
  useToken(candidate);
  await api('GET', '/v1/executions?limit=1');
  keepToken();
  // The launch form and the search's agents come from the catalog, and
  // which executions run on another host from the hosts: both read
  // before the first screen. Without the catalog the console still
  // serves, and says why the form offers no agent; without the hosts (a
  // daemon that is no host of a fleet) it names every host plainly, and
  // the Hosts screen says why it lists none.
  await Promise.all([
    loadAgents().catch((err) => reportError('The agent catalog could not be read: the launch form offers no agent.', err)),
    loadHosts().catch(() => {}),
  ]);
  login.close();
  page.signout.hidden = false;
  connectEvents();
  route();
  // The count of open requests in the navigation, on every screen.
  if (!/^#\/approvals/.test(location.hash)) inbox.load();
}

function signedOut() {
  forgetToken(false);
  closeEvents();
  execution.close();
  showLogin();
}

onUnauthorized((err) => {
  closeEvents();
  showLogin(err);
});

// ---- live events ----

let events = null;
let retry = null;

function setConn(state, text) {
  page.conn.dataset.state = state;
  page.conn.textContent = text || state;
}

function connectEvents() {
  closeEvents();
  const on = {
    terminal: (data) => execution.showTerminal(data),
    overflow: () => setConn('reconnecting', 'catching up'),
  };
  for (const name of EVENT_NAMES) on[name] = (data) => onEvent(name, data);
  events = openEvents(on);
  events.onopen = () => setConn('live');
  events.onerror = () => {
    if (events.readyState !== EventSource.CLOSED) {
      setConn('reconnecting');
      return;
    }
    // Refused outright: find out why with a call that answers in words.
    setConn('offline');
    api('GET', '/v1/executions?limit=1').then(() => {
      retry = setTimeout(connectEvents, 2000);
    }, (err) => reportError('The live event stream is closed.', err));
  };
}

function closeEvents() {
  clearTimeout(retry);
  if (events) events.close();
  events = null;
  setConn('offline');
}

// onEvent hands a live event to the screens. Each record comes as its
// own event (if any) then data.changed, which carries the summary: the
// list, the sessions and the inbox take that one.
function onEvent(name, data) {
  if (name === 'data.changed' && data.state) {
    list.update(data.state);
    sessions.update(data.state);
    inbox.update(data.state, data.record);
  }
  execution.changed(data, name);
  session.changed(data.executionId, name);
}

// ---- the address ----

// The page the address names, without the point in time an execution's
// page travels to or opens at: moving through one execution's history
// keeps the window where it is, opening another page starts at its top.
let shown = '';
const pageOf = (hash) => hash.replace(/^(#\/executions\/[^/?#]+)(?:\/at\/\d+)?(?:[?].*)?$/, '$1');

function route() {
  if (!signedIn()) {
    showLogin();
    return;
  }
  const h = location.hash;
  const exec = /^#\/executions\/([^/?#]+)(?:\/at\/(\d+))?/.exec(h);
  const one = /^#\/sessions\/([^/?#]+)/.exec(h);
  const all = /^#\/sessions\/?$/.test(h);
  const fleet = /^#\/hosts\/?$/.test(h);
  const approvals = /^#\/approvals\/?$/.test(h);
  if (!exec) execution.close();
  if (!approvals) inbox.close();
  if (!one) session.close();
  if (!all) sessions.close();
  if (!fleet) hosts.close();
  list.close();
  if (pageOf(h) !== shown) {
    shown = pageOf(h);
    window.scrollTo(0, 0);
  }
  if (exec) {
    show('execution');
    const asof = /[?&]asof=(\d+)/.exec(h);
    execution.open(decodeURIComponent(exec[1]), exec[2] ? Number(exec[2]) : 0, asof ? Number(asof[1]) : 0);
  } else if (one) {
    show('session');
    session.open(decodeURIComponent(one[1]));
  } else if (all) {
    show('sessions');
    sessions.open();
  } else if (fleet) {
    show('hosts');
    hosts.open();
  } else if (approvals) {
    show('inbox');
    inbox.open();
  } else if (/^#\/search(?:[?]|$)/.test(h)) {
    show('search');
    search.open(new URLSearchParams(h.includes('?') ? h.slice(h.indexOf('?') + 1) : ''));
  } else {
    show('list');
    list.open();
  }
}

// ---- the top bar ----

page.signout.addEventListener('click', () => {
  forgetToken(true);
  signedOut();
});
// Another tab of this browser signed out, or in.
window.addEventListener('storage', (e) => {
  if (e.key !== TOKEN_KEY) return;
  if (!e.newValue && signedIn()) signedOut();
  else if (e.newValue && !signedIn()) signIn(e.newValue).catch((err) => showLogin(err));
});
page.search.addEventListener('submit', (e) => {
  e.preventDefault();
  const q = page.q.value.trim();
  location.hash = '#/search' + (q ? '?' + new URLSearchParams({q}) : '');
  page.q.value = '';
});
window.addEventListener('hashchange', route);

const kept = tokenFromAddress() || storedToken();
if (kept) signIn(kept).catch((err) => showLogin(err));
else showLogin();
