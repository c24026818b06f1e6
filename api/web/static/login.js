// The sign-in screen: it asks for the API token, and shows why the daemon
// refused the last one.
import {parts, showError, clearError} from './dom.js';

// createLogin makes the screen; signIn is called with the token typed.
export function createLogin(root, signIn) {
  const p = parts(root);
  p.form.addEventListener('submit', (e) => {
    e.preventDefault();
    signIn(p.input.value.trim());
  });
  return {
    // open shows err, the refusal that brought the screen, if any.
    open(err) {
      if (err) showError(p.error, err);
      p.input.focus();
    },

    close() {
      clearError(p.error);
    },
  };
}
