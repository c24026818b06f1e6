// The time travel card: a slider and steps over the journal's sequences,
// which set the state and timeline the screen shows to those as of one
// record, and the raw records up to there with their log offsets.
import {api, execPath} from './api.js';
import {el, parts} from './dom.js';

// RECORDS_SHOWN is how many records, the newest, the card lists.
export const RECORDS_SHOWN = 200;

// createTimeTravel makes the card. x is the screen: x.view() what it
// shows, x.travel(seq) shows the execution as of seq, x.goLive() as it is
// now, x.current() the sequence shown, x.fail(err) shows an error.
export function createTimeTravel(root, x) {
  const p = parts(root);
  let id = '';
  let liveRecords = null;
  let scrub = null;

  p.range.addEventListener('input', () => {
    p.seq.value = p.range.value;
    clearTimeout(scrub);
    scrub = setTimeout(() => x.travel(Number(p.range.value)), 120);
  });
  p.first.addEventListener('click', () => x.travel(1));
  p.prev.addEventListener('click', () => x.travel(x.current() - 1));
  p.next.addEventListener('click', () => x.travel(x.current() + 1));
  p.go.addEventListener('click', () => x.travel(Number(p.seq.value)));
  p.seq.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') x.travel(Number(p.seq.value));
  });
  p.live.addEventListener('click', () => x.goLive());
  p.records.addEventListener('toggle', () => card.refresh());

  function drawRecords(entries) {
    if (!entries) {
      p.rows.replaceChildren();
      return;
    }
    p.rows.replaceChildren(...entries.slice().reverse().map((e) => {
      const r = e.record;
      return el('tr', {'data-seq': r.sequence, 'data-offset': e.offset},
        el('td', {}, String(e.offset)),
        el('td', {}, String(r.sequence)),
        el('td', {}, el('details', {}, el('summary', {}, r.type, e.summary ? ': ' + e.summary : ''), el('pre', {class: 'raw'}, JSON.stringify(r, null, 2)))));
    }));
  }

  const card = {
    open(execution) {
      id = execution;
      p.rows.replaceChildren();
    },

    close() {
      id = '';
      liveRecords = null;
    },

    // refresh reads the newest records while the list is open and the
    // screen is live.
    async refresh() {
      const v = x.view();
      if (!p.records.open || !v || !v.live) return;
      const of = id;
      try {
        const data = await api('GET', execPath(of, `/replay?limit=${RECORDS_SHOWN}`));
        const now = x.view();
        if (of !== id || !now || !now.live) return;
        liveRecords = data.records;
        drawRecords(liveRecords);
      } catch (err) {
        x.fail(err);
      }
    },

    render(v) {
      const last = v.current.journal.lastSequence;
      const seq = v.tt ? v.tt.seq : last;
      p.range.max = String(Math.max(1, last));
      if (document.activeElement !== p.range) p.range.value = String(seq);
      if (document.activeElement !== p.seq) p.seq.value = String(seq);
      p.seq.max = String(last);
      p.info.textContent = v.tt
        ? `Sequence ${seq} of ${last}: ${v.tt.data.state.lifecycle}, attention ${v.tt.data.state.attention}.`
        : `Live: sequence ${last} is the newest record.`;
      drawRecords(v.tt ? v.tt.data.records : liveRecords);
    },
  };
  return card;
}
