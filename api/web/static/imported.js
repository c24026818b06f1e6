// A fork or a resume of an execution whose journal was imported from a
// file runs the command and directory that file holds, not ones a launch
// on this log chose: the API refuses it (409, error.imported) until the
// request restates them. askImported shows them in box, in the page, and
// a button that runs them as shown; nothing runs before it is pressed.
import {el} from './dom.js';

export function askImported(box, err, run) {
  const im = err.imported;
  box.hidden = false;
  box.replaceChildren(
    el('p', {}, 'This journal was imported from a file: its command did not come from a launch on this log. Check what would run:'),
    el('dl', {class: 'imported-command'},
      el('dt', {}, 'Agent'), el('dd', {}, im.agentId || ''),
      el('dt', {}, 'Command'), el('dd', {}, el('code', {'data-part': 'imported-command'}, JSON.stringify(im.command || []))),
      el('dt', {}, 'Directory'), el('dd', {}, el('code', {'data-part': 'imported-dir'}, im.workingDirectory || ''))),
    el('button', {type: 'button', class: 'confirm-imported', onclick: () => run({command: im.command || [], workingDirectory: im.workingDirectory || ''})},
      'Run this command'));
}
