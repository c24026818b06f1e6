// The console's client of the daemon's API: the token, requests and their
// errors, the live event stream, the agent catalog and the fleet's hosts.

// The API token, kept in localStorage: a link to an execution opened in
// another tab or window of this browser needs no new sign-in. The price:
// it stays in the browser profile until "Forget token" (or a 401) removes
// it, readable by any script of this origin (the page's policy admits
// only the console's own scripts).
export const TOKEN_KEY = 'agentjournal.token';

let token = '';
let unauthorized = () => {};

export function signedIn() {
  return token !== '';
}

// useToken sends candidate with every call from now on.
export function useToken(candidate) {
  token = candidate;
}

// keepToken stores the token in use for the other tabs and later visits:
// once the daemon has taken it.
export function keepToken() {
  localStorage.setItem(TOKEN_KEY, token);
}

// forgetToken drops the token, here and in the browser's storage when
// stored is true.
export function forgetToken(stored) {
  token = '';
  if (stored) localStorage.removeItem(TOKEN_KEY);
}

export function storedToken() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

// onUnauthorized names what to do when the daemon refuses the token: the
// token is forgotten first.
export function onUnauthorized(fn) {
  unauthorized = fn;
}

// tokenFromAddress takes a token from #token=… and removes it from the
// address, so that it is neither bookmarked nor left on screen.
export function tokenFromAddress() {
  const m = /(?:^#|[#&])token=([^&]+)/.exec(location.hash);
  if (!m) return '';
  history.replaceState(null, '', location.pathname + location.search + '#/');
  return decodeURIComponent(m[1]);
}

// ApiError is an error answer of the API, in its one shape.
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail.message || `the daemon answered ${status}`);
    this.status = status;
    this.code = detail.code || '';
    this.field = detail.field || '';
    this.accepted = detail.accepted || [];
    // imported is, on a refused fork or resume of an imported journal,
    // the command and directory it would run (imported.js).
    this.imported = detail.imported || null;
  }
}

// request sends a call with the token and returns the response of a 2xx
// answer; any other answer is thrown as an ApiError in the API's words.
export async function request(method, path, body, signal) {
  const init = {method, headers: {Authorization: 'Bearer ' + token}, signal};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, {code: 'unreachable', message: `The daemon did not answer ${method} ${path}: ${e.message}`});
  }
  if (resp.ok) return resp;
  const text = await resp.text();
  let detail = {code: 'http_' + resp.status, message: `${method} ${path} answered ${resp.status} ${resp.statusText}: ${text.trim()}`};
  try {
    const parsed = JSON.parse(text);
    if (parsed && parsed.error) detail = parsed.error;
  } catch (_) { /* not the API's shape: keep the text */ }
  const err = new ApiError(resp.status, detail);
  if (resp.status === 401) {
    forgetToken(true);
    unauthorized(err);
  }
  throw err;
}

// api sends a call and decodes its JSON answer (null when empty).
export async function api(method, path, body) {
  const resp = await request(method, path, body);
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

// listExecutions reads a page of GET /v1/executions: its summaries, and
// total, how many match the query's filter before offset and limit.
export async function listExecutions(query) {
  const resp = await request('GET', '/v1/executions?' + query);
  const data = await resp.json();
  return {executions: data.executions, total: Number(resp.headers.get('X-Total-Count') || data.executions.length)};
}

// execPath is the path of an execution's route: execPath(id, '/todos').
export function execPath(id, rest) {
  return `/v1/executions/${encodeURIComponent(id)}${rest || ''}`;
}

// The events of the live stream the console follows, besides terminal
// snapshots and the overflow notice.
export const EVENT_NAMES = ['data.changed', 'execution.started', 'execution.updated', 'execution.completed',
  'execution.failed', 'execution.cancelled', 'execution.terminated', 'execution.message'];

// openEvents opens the live event stream. A browser's EventSource sends
// no headers: the token goes in access_token, which this route alone
// takes. on maps an event name to its handler, given the decoded data.
export function openEvents(on) {
  const source = new EventSource('/v1/events?access_token=' + encodeURIComponent(token));
  for (const [name, handle] of Object.entries(on)) {
    source.addEventListener(name, (ev) => handle(ev.data ? JSON.parse(ev.data) : null));
  }
  return source;
}

// The agent catalog (GET /v1/agents): what the daemon launches, and what
// each agent's CLI does itself.
let catalog = [];

// loadAgents reads the catalog; it is read once per sign-in.
export async function loadAgents() {
  const data = await api('GET', '/v1/agents');
  catalog = data.agents || [];
  return catalog;
}

export function agents() {
  return catalog;
}

// agentInfo is the catalog's entry of an agent, or an empty one (no
// native fork or resume) for an agent it does not list.
export function agentInfo(id) {
  return catalog.find((a) => a.id === id) || {id, nativeFork: false, nativeResume: false};
}

// The fleet (GET /v1/hosts): every daemon on the log is a host, and an
// execution names the one that runs or ran it. The console tells the host
// serving it apart from the others, so it keeps that host's name, learned
// at sign-in and again on every read of the hosts.
let self = '';

// HOST_HEADER names, on an answer another host of the fleet gave through
// the daemon serving the console, the host that answered.
export const HOST_HEADER = 'Agentjournal-Host';

// loadHosts reads the hosts as the daemon serving the console sees them,
// and when it answered by its own clock (the Date header): how long ago
// each host was heard from is told by that clock, never the browser's, as
// the fleet compares no two machines' clocks.
export async function loadHosts() {
  const resp = await request('GET', '/v1/hosts');
  const data = JSON.parse(await resp.text());
  self = data.self || '';
  const date = Date.parse(resp.headers.get('Date') || '');
  return {self, hosts: data.hosts || [], answered: Number.isNaN(date) ? Date.now() : date};
}

// selfHost is the name of the host serving the console; '' before the
// hosts were read, or from a daemon that is no host of a fleet.
export function selfHost() {
  return self;
}
