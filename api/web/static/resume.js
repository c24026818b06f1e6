// The resume card: a new run of the session of an execution that has
// ended, its agent's CLI resuming the session itself when the catalog
// says it can, else retold from the journal before a prompt.
import {api, agentInfo, execPath} from './api.js';
import {parts, showError, clearError} from './dom.js';
import {askImported} from './imported.js';
import {ENDED, executionHref} from './format.js';

export function createResume(root) {
  const p = parts(root);
  let id = '';
  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
  });

  // submit asks for the resume; confirm restates an imported journal's
  // command and directory once the user has seen them.
  async function submit(confirm) {
    const of = id;
    clearError(p.error);
    const body = {};
    if (p.prompt.value.trim()) body.prompt = p.prompt.value;
    if (confirm) body.confirmImported = confirm;
    p.submit.disabled = true;
    try {
      const res = await api('POST', execPath(of, '/resume'), body);
      if (of === id) p.prompt.value = '';
      location.hash = executionHref(res.reference.agentExecutionId);
    } catch (err) {
      if (of !== id) return;
      if (err.imported && !confirm) askImported(p.error, err, (c) => submit(c));
      else showError(p.error, err);
    } finally {
      p.submit.disabled = false;
    }
  }

  return {
    open(execution) {
      id = execution;
      root.hidden = true;
      p.prompt.value = '';
      clearError(p.error);
    },

    // render offers a resume of an execution that has ended and has no
    // process here.
    render(v) {
      const st = v.current;
      const running = st.live && st.live.running;
      const show = ENDED.has(st.lifecycle) && !running;
      root.hidden = !show;
      if (!show) return;
      const native = agentInfo(st.agentId).nativeResume;
      p.note.textContent = native
        ? `A new run of this execution's session: ${st.agentId} resumes it itself. The prompt is optional.`
        : `A new run of this execution's session: ${st.agentId} cannot resume it, so it is retold from the journal and a prompt must follow.`;
      p.prompt.placeholder = native ? 'optional' : 'required: it follows the retelling';
    },
  };
}
