// The answer card: the open needs_input request of a running execution,
// its question and its choices as buttons, and a box whose text is sent
// as an answer message naming the request.
import {api, execPath} from './api.js';
import {el, parts, showError, clearError} from './dom.js';

// descriptors are the messages an execution's protocol offers.
export function descriptors(state) {
  const pd = state && state.protocolDescriptor;
  return (pd && pd.messages) || [];
}

// canAnswer reports whether a live execution can take an answer now.
export function canAnswer(state) {
  return !!state && state.lifecycle === 'running' && descriptors(state).some((m) => m.type === 'answer');
}

export function createAnswer(root) {
  const p = parts(root);
  let id = '';
  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    card.answer(p.text.value, p.request.textContent);
  });

  const card = {
    // open forgets the last execution's request and what was typed for
    // it: an answer names its request, which another execution has not.
    open(execution) {
      id = execution;
      root.hidden = true;
      p.text.value = '';
      p.request.textContent = '';
      p.result.textContent = '';
      clearError(p.error);
    },

    close() {
      id = '';
    },

    render(v) {
      const st = v.current;
      const req = st.currentInputRequestId;
      const show = !!req && canAnswer(st);
      root.hidden = !show;
      if (!show) return;
      if (p.request.textContent !== req) {
        p.text.value = '';
        p.result.textContent = '';
        clearError(p.error);
      }
      p.request.textContent = req;
      const lir = st.lastInputRequest || {};
      p.question.textContent = st.currentInputQuestion || (lir.requestId === req ? lir.question : '') || '(no question text)';
      const choices = lir.requestId === req && lir.choices ? lir.choices : [];
      p.choices.replaceChildren(...choices.map((c) => el('button', {type: 'button', class: 'choice', onclick: () => card.answer(c, req)}, c)));
    },

    // answer sends an answer message to an input request.
    async answer(text, req) {
      const of = id;
      clearError(p.error);
      p.send.disabled = true;
      try {
        const ack = await api('POST', execPath(of, '/messages'), {type: 'answer', payload: {requestId: req, text}});
        if (of !== id) return;
        p.text.value = '';
        p.result.textContent = `Answer ${ack.messageId} to ${req} journaled at sequence ${ack.sequence}: ${ack.delivery}` +
          (ack.reason ? ` (${ack.reason})` : '');
      } catch (err) {
        if (of === id) showError(p.error, err);
      } finally {
        p.send.disabled = false;
      }
    },
  };
  return card;
}
