// The Transcript card: the execution told as a conversation, as the CLI's
// run, tail and show --transcript print it (GET .../transcript?format=text):
// the prompt, the agent's messages, one line per tool call with its
// outcome, plans, questions and answers, turn ends with tokens. It is
// closed at first and costs nothing then; open, it reads the transcript
// again at most every few seconds while live records come.
import {request, execPath} from './api.js';
import {parts, showError, clearError} from './dom.js';

// AGAIN is the least time between two reads of an open transcript.
const AGAIN = 3000;

export function createTranscript(root) {
  const p = parts(root);
  let id = '';
  let last = 0; // the journal sequence read, 0 for none
  let ask = 0; // the newest read asked for; older answers are dropped
  let timer = null;
  let at = 0; // when the last read was asked

  async function read() {
    timer = null;
    at = Date.now();
    const of = id, mine = ++ask;
    try {
      const text = await (await request('GET', execPath(of, '/transcript?format=text'))).text();
      if (of !== id || mine !== ask) return;
      clearError(p.error);
      const box = p.text;
      // The reader who scrolled up keeps their place.
      const follow = box.scrollHeight - box.scrollTop - box.clientHeight < 24;
      box.textContent = text;
      if (follow) box.scrollTop = box.scrollHeight;
    } catch (err) {
      if (of === id) showError(p.error, err);
    }
  }

  function due() {
    if (!root.open || !id || timer) return;
    timer = setTimeout(read, Math.max(0, at + AGAIN - Date.now()));
  }

  root.addEventListener('toggle', () => {
    if (root.open) {
      last = 0;
      clearTimeout(timer);
      timer = null;
      read();
    }
  });

  return {
    open(execution) {
      id = execution;
      last = 0;
      ask++;
      clearTimeout(timer);
      timer = null;
      p.text.textContent = '';
      clearError(p.error);
    },
    close() {
      id = '';
      ask++;
      clearTimeout(timer);
      timer = null;
    },
    render(v) {
      // The transcript is of the journal as it is: time travel moves the
      // timeline and the cards of state, not this reading of the whole.
      const seq = v.current.journal.lastSequence;
      if (seq !== last) {
        last = seq;
        due();
      }
    },
  };
}
