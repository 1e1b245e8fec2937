// Depot's console (DESIGN §19): plain modern JavaScript and SVG, no
// library and no build step. Every request goes to the daemon's control
// API (/v1) through `depotctl console`'s bridge, as the user who ran it, so
// the daemon's roles decide what it may do; the page only hides what the
// role forbids. Live parts read the daemon's streams (/v1/events, job
// events, history follow, live fetches); nothing polls.
'use strict';

const main = document.getElementById('main');
const PAGE = 50;

// ---- DOM -----------------------------------------------------------------

/** An element: h('a', {href: '#/', class: 'x', onclick: f}, 'text', child…). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}
const svgNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c);
  return el;
}
function toast(text) {
  const box = document.getElementById('toast');
  const item = h('div', {}, text);
  box.append(item);
  setTimeout(() => item.remove(), 5000);
}
const fmt = new Intl.NumberFormat();
const num = (n) => (n === null || n === undefined ? '' : fmt.format(n));
function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return '';
  if (seconds < 1) return '<1 s';
  if (seconds < 90) return Math.round(seconds) + ' s';
  if (seconds < 5400) return Math.round(seconds / 60) + ' min';
  return (seconds / 3600).toFixed(1) + ' h';
}
function display(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// ---- the API ---------------------------------------------------------------

// The session depotctl console's bridge gave this tab, in the fragment of
// the address it sent the printed URL on to (never sent over the wire).
// Kept by the browser for this origin alone (localStorage: the scheme, host
// and port of the bridge, so no page of another port or user reads it) and
// sent as a header with every request: a cookie would go to every port of
// 127.0.0.1, another user's server among them.
const SESSION_KEY = 'depot-session';
(() => {
  const m = location.hash.match(/^#session=([0-9a-f]{64})$/);
  if (m) {
    localStorage.setItem(SESSION_KEY, m[1]);
    history.replaceState(null, '', location.pathname + '#/');
  }
})();
const session = () => localStorage.getItem(SESSION_KEY) || '';
const withSession = (headers = {}) => ({ ...headers, 'X-Depot-Session': session() });

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `the daemon answered ${status}`);
    this.status = status;
    this.code = e.code;
    this.position = e.position;
    this.changes = e.changes;
  }
}

/** A request; the answer's JSON (and its ETag). Errors throw ApiError. */
async function api(method, path, body, headers = {}) {
  const init = { method, headers: withSession(headers), credentials: 'omit' };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!r.ok) throw new ApiError(r.status, json);
  if (json && typeof json === 'object') Object.defineProperty(json, 'etag', { value: r.headers.get('ETag') });
  return json;
}

/** An NDJSON stream: onLine(object) for each line, until it ends or `signal` aborts. */
async function stream(path, init, onLine, signal) {
  const r = await fetch(path, { ...init, headers: withSession(init.headers), signal, credentials: 'omit' });
  if (!r.ok) {
    let json = null;
    try { json = await r.json(); } catch { json = null; }
    throw new ApiError(r.status, json);
  }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim()) onLine(JSON.parse(line));
    }
  }
}

const enc = encodeURIComponent;
const state = { me: null, page: null };
const canWrite = () => state.me && state.me.role === 'write';

/**
 * The signal of the page being shown, aborted when another page is shown.
 * A page takes it in its first line, before any await: asked later, it
 * could be the next page's, and a stream opened then would outlive its own.
 */
function pageSignal() { return state.page.signal; }
function follow(path, init, onLine, signal) {
  stream(path, init, onLine, signal).catch((e) => {
    if (e.name !== 'AbortError') toast('A live stream ended: ' + e.message);
  });
}

// ---- pages ----------------------------------------------------------------

const routes = [
  [/^#?\/?$/, storesPage],
  [/^#\/browse\/([^/]+)\/([^/?]+)(?:\?(.*))?$/, browsePage],
  [/^#\/record\/([^/]+)\/([^/]+)\/(.+)$/, recordPage],
  [/^#\/jobs$/, jobsPage],
  [/^#\/history(?:\?(.*))?$/, historyPage],
  [/^#\/consumers$/, consumersPage],
  [/^#\/watches$/, watchesPage],
  [/^#\/charts$/, chartsPage],
];

async function route() {
  if (state.page) state.page.abort();
  state.page = new AbortController();
  const hash = location.hash || '#/';
  for (const a of document.querySelectorAll('nav a')) {
    const target = a.getAttribute('href');
    const current = target === '#/' ? hash === '#/' || hash.startsWith('#/browse') || hash.startsWith('#/record')
      : hash.startsWith(target);
    if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  for (const [pattern, page] of routes) {
    const m = hash.match(pattern);
    if (!m) continue;
    const signal = state.page.signal;
    try {
      const content = await page(...m.slice(1).map((x) => (x === undefined ? x : decodeURIComponent(x))));
      if (signal.aborted) return;
      main.replaceChildren(...[content].flat().filter((x) => x !== null && x !== undefined && x !== false));
    } catch (e) {
      if (signal.aborted) return;
      main.replaceChildren(h('h1', {}, 'Depot'), errorBox(e));
    }
    const heading = main.querySelector('h1');
    if (heading) { heading.tabIndex = -1; if (document.activeElement === document.body) heading.focus(); }
    return;
  }
  main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'The stores')));
}

function errorBox(e, text) {
  const box = h('div', { class: 'error', role: 'alert' }, e.message);
  if (text !== undefined && e.position) {
    box.append(h('pre', { 'aria-label': 'where' }, text + '\n' + ' '.repeat(Math.max(0, e.position - 1)) + '^'));
  }
  return box;
}

// -- Stores

async function storesPage() {
  const { stores } = await api('GET', '/v1/stores');
  document.title = 'Stores · Depot';
  const out = [h('h1', {}, 'Stores')];
  if (!stores.length) out.push(h('p', { class: 'muted' }, 'No stores: the daemon\'s configuration names none.'));
  for (const st of stores) {
    out.push(h('h2', {}, st.name), h('p', { class: 'muted mono' }, `${st.path} · token ${st.token ?? 'none yet'}`));
    if (!st.entities.length) { out.push(h('p', { class: 'muted' }, 'No entities.')); continue; }
    out.push(h('div', { class: 'scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, h('th', {}, 'Entity'), h('th', { class: 'num' }, 'Records'),
        h('th', {}, 'Identifier'), h('th', {}, 'Fields'), h('th', {}, 'Relationships'))),
      h('tbody', {}, st.entities.map((e) => h('tr', {},
        h('td', {}, h('a', { href: `#/browse/${enc(st.name)}/${enc(e.name)}` }, e.name)),
        h('td', { class: 'num', 'data-count': `${st.name}.${e.name}` }, num(e.count)),
        h('td', { class: 'mono' }, e.identifier.join(', ')),
        h('td', { class: 'mono cell', title: e.fields.map((f) => `${f.name}: ${f.type}`).join('\n') },
          e.fields.map((f) => f.name).join(', ')),
        h('td', {}, e.relationships.map((r) => `${r.name} → ${r.to}`).join(', '))))))));
  }
  return out;
}

async function entityInfo(store, entity) {
  const st = await api('GET', `/v1/stores/${enc(store)}`);
  const info = st.entities.find((e) => e.name === entity);
  if (!info) throw new ApiError(404, { error: { message: `the store ${store} has no entity ${entity}` } });
  return info;
}

// -- The record browser

/**
 * Keyset paging (page by page at any depth, each page one indexed range):
 * the sort field, then the identifier's fields, are the order; a page
 * starts after the last record of the one before, which the daemon is
 * given as `after` (its values of those keys, in that order; DESIGN §4).
 */
async function fetchPage(store, entity, where, sortKey, desc, keys, cursor) {
  const sort = [...(sortKey ? [(desc ? '-' : '') + sortKey] : []), ...keys.map((k) => (k.desc ? '-' : '') + k.field)];
  const body = { sort, limit: PAGE + 1 };
  if (where) body.where = where;
  if (cursor) body.after = [...(sortKey ? [cursor.value ?? null] : []), ...cursor.keys];
  const answer = await api('POST', `/v1/stores/${enc(store)}/entities/${enc(entity)}/fetch`, body);
  return answer.records;
}

function recordId(info, record) {
  const values = info.identifier.map((f) => record[f]);
  return values.length === 1 ? String(values[0]) : JSON.stringify(values);
}

async function browsePage(store, entity, query) {
  await state.whoami;
  const info = await entityInfo(store, entity);
  const params = new URLSearchParams(query || '');
  const where = params.get('where') || '';
  const sortParam = params.get('sort') || '';
  const desc = sortParam.startsWith('-');
  const sortField = sortParam.replace(/^-/, '') || null;
  // A sort by a field of the identifier puts it first among the keys.
  const sortKey = sortField && !info.identifier.includes(sortField) ? sortField : null;
  const keys = sortField && !sortKey
    ? [{ field: sortField, desc }, ...info.identifier.filter((f) => f !== sortField).map((field) => ({ field, desc: false }))]
    : info.identifier.map((field) => ({ field, desc: false }));
  document.title = `${entity} · ${store} · Depot`;

  const fields = [...info.identifier, ...info.fields.map((f) => f.name).filter((f) => !info.identifier.includes(f))];
  const whereInput = h('input', { id: 'where', name: 'where', value: where, autocomplete: 'off', spellcheck: 'false',
    placeholder: 'budget > 1000 AND destination BEGINSWITH "P"', 'aria-describedby': 'where-error' });
  const sortSelect = h('select', { id: 'sort', name: 'sort' },
    fields.map((f) => h('option', { value: f, selected: (sortField || info.identifier[0]) === f }, f)));
  const dirSelect = h('select', { id: 'dir', name: 'dir', 'aria-label': 'Direction' },
    h('option', { value: 'asc', selected: !desc }, 'ascending'), h('option', { value: 'desc', selected: desc }, 'descending'));
  const form = h('form', { class: 'query', role: 'search' },
    h('div', { class: 'wide' }, h('label', { for: 'where' }, 'Predicate'), whereInput),
    h('div', {}, h('label', { for: 'sort' }, 'Sort by'), sortSelect),
    h('div', {}, h('label', { for: 'dir' }, 'Order'), dirSelect),
    h('div', {}, h('button', { type: 'submit' }, 'Fetch')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    if (whereInput.value.trim()) p.set('where', whereInput.value.trim());
    const sf = sortSelect.value;
    if (sf !== info.identifier[0] || dirSelect.value === 'desc') p.set('sort', (dirSelect.value === 'desc' ? '-' : '') + sf);
    const target = `#/browse/${enc(store)}/${enc(entity)}` + (p.toString() ? '?' + p : '');
    if (location.hash === target) route(); else location.hash = target;
  });

  const errorArea = h('div', { id: 'where-error' });
  const table = h('table', { class: 'records' });
  const status = h('span', { class: 'muted', 'aria-live': 'polite' });
  const prev = h('button', { class: 'plain', type: 'button', disabled: true }, '← Previous');
  const next = h('button', { class: 'plain', type: 'button', disabled: true }, 'Next →');
  const pageLabel = h('span', {}, '');
  const starts = [null];
  let page = 0;

  const head = h('thead', {}, h('tr', {}, fields.map((f) => h('th', { scope: 'col' }, f))));
  async function show(cursor) {
    status.textContent = 'Fetching…';
    const t0 = performance.now();
    let records;
    try {
      records = await fetchPage(store, entity, where, sortKey, desc, keys, cursor);
    } catch (e) {
      whereInput.setAttribute('aria-invalid', 'true');
      if (e.position) whereInput.setSelectionRange(e.position - 1, where.length);
      errorArea.replaceChildren(errorBox(e, where));
      status.textContent = '';
      table.replaceChildren();
      return;
    }
    const more = records.length > PAGE;
    records = records.slice(0, PAGE);
    table.replaceChildren(head, h('tbody', {}, records.map((r) => h('tr', {},
      fields.map((f, i) => {
        const v = r[f];
        if (i === 0) {
          return h('td', { class: 'cell' }, h('a', { href: `#/record/${enc(store)}/${enc(entity)}/${enc(recordId(info, r))}` },
            display(v)));
        }
        return h('td', { class: 'cell' + (v === null || v === undefined ? ' null' : ''), title: display(v) }, display(v));
      })))));
    const ms = Math.round(performance.now() - t0);
    status.textContent = `${records.length ? `records ${num(page * PAGE + 1)}–${num(page * PAGE + records.length)}` : 'no records'} · ${ms} ms`;
    main.dataset.pageMs = String(ms);
    pageLabel.textContent = `Page ${num(page + 1)}`;
    prev.disabled = page === 0;
    next.disabled = !more;
    const last = records[records.length - 1];
    starts[page + 1] = last ? { value: sortKey ? last[sortKey] : undefined, keys: keys.map((k) => last[k.field]) } : null;
  }
  prev.addEventListener('click', () => { page -= 1; show(starts[page]); });
  next.addEventListener('click', () => { page += 1; show(starts[page]); });

  const count = h('span', { class: 'muted' });
  api('POST', `/v1/stores/${enc(store)}/entities/${enc(entity)}/fetch`, { result: 'count', ...(where ? { where } : {}) })
    .then((a) => { count.textContent = `${num(a.count)} record${a.count === 1 ? '' : 's'}${where ? ' match' : ''}`; })
    .catch(() => {});

  show(null);
  return [
    h('h1', {}, `${entity} `, h('span', { class: 'muted' }, `in ${store}`)),
    form, errorArea,
    h('div', { class: 'pager' }, prev, pageLabel, next, count, status),
    h('div', { class: 'scroll' }, table),
    canWrite() ? importPanel(store, entity) : null,
  ];
}

// -- One record: its fields, editing, its related records

async function recordPage(store, entity, id) {
  await state.whoami;
  const info = await entityInfo(store, entity);
  const path = `/v1/stores/${enc(store)}/entities/${enc(entity)}/records/${enc(id)}`;
  document.title = `${entity} ${id} · Depot`;
  const record = await api('GET', path);
  let base = { ...record };
  let etag = record.etag;
  const types = Object.fromEntries(info.fields.map((f) => [f.name, f.type]));
  const inputs = {};
  const editable = canWrite();
  // The identifier's fields first, then the others as the entity lists them.
  const order = [...info.identifier, ...Object.keys(types).filter((f) => !info.identifier.includes(f))];
  const fieldsBox = h('div', { class: 'grid' }, order.map((name) => {
    const v = record[name];
    const input = h('input', { id: 'f-' + name, name, value: v === null || v === undefined ? '' : display(v),
      readonly: !editable || info.identifier.includes(name), 'data-type': types[name] });
    inputs[name] = input;
    return h('div', { class: 'field' }, h('label', { for: 'f-' + name }, `${name} `, h('span', { class: 'muted' }, types[name])), input);
  }));
  const message = h('div', { 'aria-live': 'polite' });
  const tokenText = (tag) => `token ${(tag || '').replaceAll('"', '')}`;
  const tokenLabel = h('span', { class: 'muted mono' }, tokenText(etag));

  function parse(name, text) {
    const type = types[name].replace(/\?$/, '');
    if (text === '' && types[name].endsWith('?')) return null;
    if (type === 'int') { if (!/^-?\d+$/.test(text)) throw new Error(`${name} takes a whole number`); return Number(text); }
    if (type === 'double') { const n = Number(text); if (text === '' || isNaN(n)) throw new Error(`${name} takes a number`); return n; }
    if (type === 'bool') { if (text !== 'true' && text !== 'false') throw new Error(`${name} takes true or false`); return text === 'true'; }
    if (type === 'json') return JSON.parse(text);
    return text;
  }
  async function save(merge) {
    const set = {};
    try {
      for (const [name, input] of Object.entries(inputs)) {
        if (info.identifier.includes(name)) continue;
        const value = parse(name, input.value);
        if (display(value) !== display(base[name])) set[name] = value;
      }
    } catch (e) { message.replaceChildren(errorBox(e)); return; }
    if (!Object.keys(set).length) { message.replaceChildren(h('p', { class: 'muted' }, 'Nothing changed.')); return; }
    try {
      const answer = await fetch(path + (merge ? `?merge=${merge}` : ''), {
        method: 'PATCH', credentials: 'omit',
        headers: withSession({ 'Content-Type': 'application/json', 'If-Match': etag }),
        body: JSON.stringify(set),
      });
      const body = await answer.json().catch(() => null);
      if (!answer.ok) throw new ApiError(answer.status, body);
      etag = answer.headers.get('ETag');
      base = { ...base, ...set };
      tokenLabel.textContent = tokenText(etag);
      message.replaceChildren(h('p', { class: 'state-succeeded', role: 'status' }, `Saved at token ${body.token ?? etag}.`));
      readHistory();
    } catch (e) {
      if (e.code === 'conflict') message.replaceChildren(conflictBox(e, set)); else message.replaceChildren(errorBox(e));
    }
  }
  function conflictBox(e, set) {
    const rows = [];
    for (const c of e.changes || []) for (const f of c.conflicts || []) rows.push(f);
    return h('div', { class: 'error conflict', role: 'alert' },
      h('p', {}, 'Another save changed this record since you read it:'),
      h('div', { class: 'scroll' }, h('table', {},
        h('thead', {}, h('tr', {}, h('th', {}, 'Field'), h('th', {}, 'When you read it'), h('th', {}, 'Stored now'), h('th', {}, 'Yours'))),
        h('tbody', {}, rows.map((f) => h('tr', {}, h('td', {}, f.field),
          h('td', {}, 'base' in f ? display(f.base) : '(not kept)'), h('td', {}, display(f.stored)), h('td', {}, display(f.yours))))))),
      h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: () => route() }, 'Take the stored record'),
        h('button', { type: 'button', class: 'danger', onclick: () => save('object-trump') }, 'Save mine over it')));
  }

  const related = h('div');
  const rels = info.relationships || [];
  if (rels.length) {
    related.append(h('h2', {}, 'Related records'));
    const list = h('ul');
    for (const r of rels) {
      if (r.kind === 'to-one') {
        const values = (r.columns || []).map((c) => record[c]);
        if (values.some((v) => v === null || v === undefined)) { list.append(h('li', {}, `${r.name}: none`)); continue; }
        const rid = values.length === 1 ? String(values[0]) : JSON.stringify(values);
        list.append(h('li', {}, `${r.name}: `, h('a', { href: `#/record/${enc(store)}/${enc(r.to)}/${enc(rid)}` }, `${r.to} ${rid}`)));
      } else if (r.inverse) {
        const where = info.identifier.length === 1 ? `${r.inverse}.${info.identifier[0]} == ${JSON.stringify(record[info.identifier[0]])}` : null;
        if (where) list.append(h('li', {}, `${r.name}: `, h('a', { href: `#/browse/${enc(store)}/${enc(r.to)}?${new URLSearchParams({ where })}` }, `the ${r.to} records`)));
      }
    }
    related.append(list);
  }

  const historyBox = h('div', {}, h('h2', {}, 'History'), h('p', { class: 'muted' }, 'Reading…'));
  function readHistory() {
    api('GET', `/v1/stores/${enc(store)}/entities/${enc(entity)}/records/${enc(id)}/history`).then((a) => {
      const changes = a.transactions.flatMap((t) => t.changes.map((c) => ({ ...c, token: t.token, timestamp: t.timestamp, author: t.author, job: t.job })));
      historyBox.replaceChildren(h('h2', {}, 'History, old → new'), changesList(changes));
    }).catch((e) => historyBox.replaceChildren(h('h2', {}, 'History'), errorBox(e)));
  }
  readHistory();

  return [
    h('h1', {}, `${entity} ${id} `, tokenLabel),
    h('p', {}, h('a', { href: `#/browse/${enc(store)}/${enc(entity)}` }, `← all ${entity} records`)),
    h('form', { onsubmit: (ev) => { ev.preventDefault(); save(); } }, fieldsBox,
      editable ? h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save')) : null),
    message, related, historyBox,
  ];
}

/** A record's changes, old → new. */
function changesList(changes) {
  if (!changes.length) return h('p', { class: 'muted' }, 'No change of it is kept.');
  return h('ol', { class: 'feed', id: 'record-history' }, changes.map((c) => h('li', { 'data-kind': c.kind },
    h('span', { class: 'tag ' + c.kind }, c.kind), ' ',
    h('span', { class: 'muted mono' }, `token ${c.token} · ${c.timestamp} · ${c.author}${c.job ? ' · job ' + c.job : ''}`),
    c.fields ? h('div', { class: 'mono' }, c.fields.map((f) => {
      const o = c.old && f in c.old ? display(c.old[f]) : null;
      const n = c.new && f in c.new ? display(c.new[f]) : null;
      return h('div', {}, `${f}: `, o !== null ? `${o} → ` : '', n ?? '');
    })) : (c.new || c.old) ? h('div', { class: 'mono cell' }, display(c.new || c.old)) : null)));
}

// -- Imports: a dropped file, uploaded with its progress, then its job's

function importPanel(store, entity) {
  const signal = pageSignal();
  const file = h('input', { type: 'file', id: 'import-file', multiple: true, accept: '.csv,.tsv,.ndjson,.jsonl,.json,text/csv', hidden: true });
  const onConflict = h('select', { id: 'on-conflict' },
    ['upsert', 'replace', 'skip', 'fail'].map((v) => h('option', { value: v }, v)));
  const drop = h('div', { class: 'drop', tabindex: '0', role: 'button', 'aria-describedby': 'drop-help' },
    h('strong', {}, `Import into ${entity}`), h('div', { id: 'drop-help', class: 'muted' },
      'Drop a CSV, TSV, NDJSON or JSON file here, or press Enter to choose one.'));
  const progress = h('div', { 'aria-live': 'polite' });
  drop.addEventListener('click', () => file.click());
  drop.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); file.click(); } });
  drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (ev) => {
    ev.preventDefault();
    drop.classList.remove('over');
    for (const f of ev.dataTransfer.files) upload(f);
  });
  file.addEventListener('change', () => { for (const f of file.files) upload(f); file.value = ''; });
  function upload(f) {
    const ext = (f.name.split('.').pop() || '').toLowerCase();
    const format = { tsv: 'tsv', ndjson: 'ndjson', jsonl: 'ndjson', json: 'json' }[ext] || 'csv';
    const row = jobRow(null, f.name);
    progress.prepend(row.el);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/stores/${enc(store)}/entities/${enc(entity)}/import?format=${format}&on_conflict=${onConflict.value}`);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.setRequestHeader('X-Depot-Session', session());
    xhr.upload.addEventListener('progress', (ev) => {
      if (ev.lengthComputable) row.uploading(ev.loaded / ev.total, ev.loaded);
    });
    xhr.addEventListener('load', () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { body = null; }
      if (xhr.status >= 300) { row.failed(new ApiError(xhr.status, body).message); return; }
      row.update(body);
      follow(`/v1/jobs/${enc(body.id)}/events`, {}, (job) => row.update(job), signal);
    });
    xhr.addEventListener('error', () => row.failed('the upload broke off'));
    row.onCancel = () => xhr.abort();
    xhr.send(f);
  }
  return h('section', { 'aria-label': 'Import a file' }, h('h2', {}, 'Import a file'),
    h('div', { class: 'field' }, h('label', { for: 'on-conflict' }, 'When a record exists already'), onConflict),
    drop, file, progress);
}

/** A job's line: its state, a progress bar, rate, ETA, and its controls. */
function jobRow(job, label) {
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-label': 'progress' }, h('span'));
  const stateCell = h('span', {}, 'uploading');
  const detail = h('span', { class: 'muted' });
  const controls = h('span', { class: 'actions' });
  const el = h('div', { class: 'panel job' }, h('div', {}, h('strong', {}, label || ''), ' ', stateCell), bar, detail, controls);
  const row = { el, job, onCancel: null };
  function setBar(fraction, cls) {
    const pct = Math.max(0, Math.min(100, Math.round(fraction * 1000) / 10));
    bar.firstChild.style.width = pct + '%';
    bar.setAttribute('aria-valuenow', String(pct));
    bar.className = 'bar' + (cls ? ' ' + cls : '');
  }
  row.uploading = (fraction, bytes) => {
    setBar(fraction);
    detail.textContent = ` uploading ${num(bytes)} bytes`;
    if (!controls.firstChild) controls.append(h('button', { class: 'danger', type: 'button', onclick: () => row.onCancel && row.onCancel() }, 'Cancel'));
  };
  row.failed = (text) => { stateCell.textContent = 'failed'; stateCell.className = 'state-failed'; detail.textContent = ' ' + text; controls.replaceChildren(); setBar(1, 'failed'); };
  row.update = (j) => {
    row.job = j;
    el.dataset.job = j.id;
    el.dataset.state = j.state;
    stateCell.textContent = j.state;
    stateCell.className = 'state-' + j.state;
    const total = j.bytes_total || 0;
    const fraction = j.state === 'succeeded' ? 1 : total ? (j.bytes_read || 0) / total : 0;
    setBar(fraction, { succeeded: 'done', failed: 'failed', cancelled: 'cancelled' }[j.state] || '');
    const parts = [`${j.kind} ${j.id}`, `${num(j.read)} read`];
    if (j.inserted) parts.push(`${num(j.inserted)} inserted`);
    if (j.updated) parts.push(`${num(j.updated)} updated`);
    if (j.deleted) parts.push(`${num(j.deleted)} deleted`);
    if (j.rejected) parts.push(`${num(j.rejected)} rejected`);
    if (j.state === 'running' && j.rate) parts.push(`${num(Math.round(j.rate))}/s`);
    if (j.state === 'running' && j.eta !== undefined && j.eta !== null) parts.push(`ETA ${duration(j.eta)}`);
    if (j.error) parts.push(j.error);
    detail.textContent = ' ' + parts.join(' · ');
    controls.replaceChildren(...jobControls(j));
  };
  if (job) row.update(job);
  return row;
}

/** A job's rejects in a tab of their own: fetched with the session, shown from memory. */
async function showRejects(id) {
  const tab = window.open('', '_blank');
  try {
    const r = await fetch(`/v1/jobs/${enc(id)}/rejects`, { headers: withSession(), credentials: 'omit' });
    if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
    const url = URL.createObjectURL(new Blob([await r.blob()], { type: 'text/plain' }));
    if (tab) tab.location = url; else window.open(url, '_blank');
  } catch (e) {
    if (tab) tab.close();
    toast(e.message);
  }
}

function jobControls(j) {
  const out = [];
  if (j.rejected) out.push(h('a', { href: `/v1/jobs/${enc(j.id)}/rejects`, onclick: (ev) => { ev.preventDefault(); showRejects(j.id); } }, 'Rejects'));
  if (!canWrite()) return out;
  if (j.state === 'queued' || j.state === 'running') {
    out.push(h('button', { class: 'danger', type: 'button', onclick: async (ev) => {
      ev.target.disabled = true;
      try { await api('DELETE', `/v1/jobs/${enc(j.id)}`); } catch (e) { toast(e.message); ev.target.disabled = false; }
    } }, 'Cancel'));
  }
  const saves = j.inserted || j.updated || j.deleted;
  if (j.state !== 'queued' && j.state !== 'running' && saves && j.kind !== 'revert' && j.kind !== 'migrate') {
    out.push(h('button', { class: 'plain', type: 'button', onclick: async (ev) => {
      if (!confirm(`Take back every change job ${j.id} saved?`)) return;
      ev.target.disabled = true;
      try {
        const r = await api('POST', '/v1/jobs', { kind: 'revert', store: j.store, job: j.id });
        toast(`Revert job ${r.id} queued.`);
      } catch (e) { toast(e.message); ev.target.disabled = false; }
    } }, 'Revert'));
  }
  return out;
}

// -- Jobs, live

async function jobsPage() {
  const signal = pageSignal();
  await state.whoami;
  document.title = 'Jobs · Depot';
  const { jobs } = await api('GET', '/v1/jobs');
  const list = h('div', { id: 'jobs' });
  const rows = new Map();
  function place(j) {
    let row = rows.get(j.id);
    if (!row) {
      row = jobRow(j, `${j.kind} · ${j.store}${j.entity ? '.' + j.entity : ''}${j.watch_file ? ' · ' + j.watch_file.split('/').pop() : ''}`);
      rows.set(j.id, row);
      list.prepend(row.el);
    } else row.update(j);
  }
  for (const j of jobs) place(j);
  follow('/v1/events', {}, (event) => { if (event.job) place(event.job); }, signal);
  return [h('h1', {}, 'Jobs'),
    jobs.length ? null : h('p', { class: 'muted', id: 'no-jobs' }, 'No jobs yet; they show here as they come.'), list];
}

// -- The history feed, live

async function historyPage(query) {
  const signal = pageSignal();
  document.title = 'History · Depot';
  const params = new URLSearchParams(query || '');
  const { stores } = await api('GET', '/v1/stores');
  if (!stores.length) return [h('h1', {}, 'History'), h('p', { class: 'muted' }, 'No stores.')];
  const store = params.get('store') || stores[0].name;
  const st = stores.find((x) => x.name === store) || stores[0];
  const entity = params.get('entity') || '';
  const author = params.get('author') || '';
  const storeSelect = h('select', { id: 'h-store', name: 'store' }, stores.map((x) => h('option', { value: x.name, selected: x.name === st.name }, x.name)));
  const entitySelect = h('select', { id: 'h-entity', name: 'entity' }, h('option', { value: '' }, 'every entity'),
    st.entities.map((e) => h('option', { value: e.name, selected: e.name === entity }, e.name)));
  const authorInput = h('input', { id: 'h-author', name: 'author', value: author, placeholder: 'any author' });
  const form = h('form', { class: 'query' },
    h('div', {}, h('label', { for: 'h-store' }, 'Store'), storeSelect),
    h('div', {}, h('label', { for: 'h-entity' }, 'Entity'), entitySelect),
    h('div', {}, h('label', { for: 'h-author' }, 'Author'), authorInput),
    h('div', {}, h('button', { type: 'submit' }, 'Show')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams({ store: storeSelect.value });
    if (entitySelect.value) p.set('entity', entitySelect.value);
    if (authorInput.value.trim()) p.set('author', authorInput.value.trim());
    location.hash = '#/history?' + p;
  });
  const feed = h('ol', { class: 'feed', id: 'feed', reversed: true });
  // A transaction larger than a line's 500 changes comes in parts (T.K):
  // its parts add up in one item.
  const items = new Map();
  function show(t) {
    const whole = String(t.token).split('.')[0];
    let item = items.get(whole);
    if (!item) {
      item = { kinds: {}, ids: [], el: h('li', { 'data-token': whole }) };
      items.set(whole, item);
      feed.prepend(item.el);
      while (feed.children.length > 200) { items.delete(feed.lastChild.dataset.token); feed.lastChild.remove(); }
    }
    for (const c of t.changes) {
      item.kinds[c.kind] = (item.kinds[c.kind] || 0) + 1;
      if (item.ids.length < 8) item.ids.push(`${c.entity} ${display(c.identifier)}`);
    }
    const total = Object.values(item.kinds).reduce((a, b) => a + b, 0);
    item.el.replaceChildren(
      h('strong', { class: 'mono' }, `#${whole}`), ' ',
      h('span', { class: 'muted' }, `${t.timestamp} · ${t.author}${t.job ? ' · job ' + t.job : ''}`), ' ',
      ...Object.entries(item.kinds).map(([k, n]) => h('span', { class: 'tag ' + k }, `${num(n)} ${k}`)),
      h('div', { class: 'mono cell' }, item.ids.join(', ') + (total > item.ids.length ? ' …' : '')));
  }
  const q = new URLSearchParams({ limit: '10', max_changes: '500' });
  const latest = Number(st.token || 0);
  if (latest > 10) q.set('after', String(latest - 10));
  if (entity) q.set('entity', entity);
  if (author) q.set('author', author);
  const page = await api('GET', `/v1/stores/${enc(st.name)}/history?${q}`);
  for (const t of page.transactions) show(t);
  const last = page.transactions.length ? page.transactions[page.transactions.length - 1].token : q.get('after');
  if (last) q.set('after', last); else q.delete('after');
  q.delete('limit');
  q.set('follow', 'true');
  follow(`/v1/stores/${enc(st.name)}/history?${q}`, {}, show, signal);
  return [h('h1', {}, 'History'), form, h('p', { class: 'muted', 'aria-live': 'polite' }, 'Live: new transactions appear at the top.'), feed];
}

// -- Consumers

async function consumersPage() {
  const signal = pageSignal();
  document.title = 'Consumers · Depot';
  const { stores } = await api('GET', '/v1/stores');
  const tbody = h('tbody');
  async function load() {
    const rows = [];
    for (const st of stores) {
      const { consumers } = await api('GET', `/v1/stores/${enc(st.name)}/consumers`);
      for (const c of consumers) {
        rows.push(h('tr', {}, h('td', {}, st.name), h('td', {}, c.name), h('td', { class: 'mono' }, c.token),
          h('td', { class: 'num' }, num(c.lag_transactions)), h('td', { class: 'num' }, duration(c.lag_seconds)),
          h('td', { class: c.state === 'lost' ? 'state-failed' : '' }, c.state), h('td', { class: 'muted' }, c.acknowledged_at)));
      }
    }
    tbody.replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'No consumers.'))]));
  }
  await load();
  // Lag moves with each commit: the history streams say when to look again.
  let queued = false;
  const again = () => {
    if (queued) return;
    queued = true;
    setTimeout(() => { queued = false; if (!signal.aborted) load().catch(() => {}); }, 500);
  };
  for (const st of stores) {
    // A line at most per 10,000 changes: an import's save of 50,000 is five.
    const q = new URLSearchParams({ follow: 'true', max_changes: '10000' });
    if (st.token) q.set('after', st.token);
    follow(`/v1/stores/${enc(st.name)}/history?${q}`, {}, again, signal);
  }
  return [h('h1', {}, 'Consumers'), h('div', { class: 'scroll' }, h('table', {},
    h('thead', {}, h('tr', {}, ['Store', 'Consumer', 'Token', 'Lag (transactions)', 'Lag (time)', 'State', 'Acknowledged'].map((t) => h('th', {}, t)))),
    tbody))];
}

// -- Watched folders

async function watchesPage() {
  const signal = pageSignal();
  document.title = 'Watched folders · Depot';
  const tbody = h('tbody');
  async function load() {
    const { watches } = await api('GET', '/v1/watches');
    tbody.replaceChildren(...(watches.length ? watches.map((w) => h('tr', {},
      h('td', { class: 'mono' }, w.path), h('td', {}, `${w.store}.${w.entity}`), h('td', {}, w.format), h('td', {}, w.on_conflict),
      h('td', { class: 'num' }, num(w.pending)), h('td', { class: 'num' }, num(w.done)), h('td', { class: 'num' }, num(w.failed))))
      : [h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'No watched folders ([[watch]] in the configuration adds one).'))]));
  }
  await load();
  follow('/v1/events', {}, () => load().catch(() => {}), signal);
  return [h('h1', {}, 'Watched folders'), h('div', { class: 'scroll' }, h('table', {},
    h('thead', {}, h('tr', {}, ['Folder', 'Feeds', 'Format', 'On conflict', 'Waiting', 'Done', 'Failed'].map((t) => h('th', {}, t)))),
    tbody))];
}

// -- Charts of the daemon's own figures, the last hour

async function chartsPage() {
  document.title = 'Charts · Depot';
  const figures = await api('GET', '/v1/figures');
  const box = h('div');
  function draw(f) {
    const series = [
      ['Rows imported per second', f.samples.map((x) => x.rows_per_second), (v) => num(Math.round(v))],
      ['Save latency over the API (ms, mean)', f.samples.map((x) => x.save_ms), (v) => v.toFixed(1)],
      ['Import save latency (ms, mean)', f.samples.map((x) => x.import_save_ms), (v) => num(Math.round(v))],
      ['Consumer lag (transactions, largest)', f.samples.map((x) => x.consumer_lag), (v) => num(Math.round(v))],
    ];
    box.replaceChildren(...series.map(([title, values, label]) => h('section', {}, h('h2', {}, title), chart(values, label, f.interval))));
  }
  draw(figures);
  return [h('h1', {}, 'Charts'), h('p', { class: 'muted' }, `The last hour, a point every ${figures.interval} s, from the daemon's own figures.`), box];
}

function chart(values, label, interval) {
  const w = 720, hgt = 180, left = 44, right = 8;
  const slots = Math.max(2, Math.round(3600 / interval));
  const shown = values.slice(-slots);
  const max = Math.max(1e-9, ...shown.filter((v) => v !== null));
  // The hour's slots, the newest point at the right edge.
  const x = (i) => w - right - ((shown.length - 1 - i) * (w - left - right)) / (slots - 1);
  const y = (v) => hgt - 20 - (v / max) * (hgt - 34);
  let d = '';
  let gap = true;
  shown.forEach((v, i) => {
    if (v === null) { gap = true; return; }
    d += (gap ? 'M' : 'L') + x(i).toFixed(1) + ' ' + y(v).toFixed(1);
    gap = false;
  });
  const last = [...shown].reverse().find((v) => v !== null);
  return s('svg', { class: 'chart', viewBox: `0 0 ${w} ${hgt}`, role: 'img',
    'aria-label': `latest ${last === undefined ? 'none' : label(last)}, highest ${label(max)}` },
    s('line', { x1: left, y1: hgt - 20, x2: w - right, y2: hgt - 20 }),
    s('text', { x: 2, y: 14 }, label(max)), s('text', { x: 2, y: hgt - 22 }, '0'),
    s('text', { x: left, y: hgt - 4 }, '−60 min'),
    s('text', { x: w - 30, y: hgt - 4 }, 'now'),
    s('path', { d }));
}

// ---- start ----------------------------------------------------------------

async function start() {
  if (!session()) {
    // Opened without the printed URL (another tab, a bookmark): there is
    // nothing this page may ask for.
    main.replaceChildren(h('h1', {}, 'Depot'), h('p', {},
      'Open the console with the URL depotctl console printed (its token is good once, in one browser tab).'));
    document.body.dataset.ready = 'true';
    return;
  }
  // Who the daemon sees, and the first page, asked for together; a page
  // that shows controls waits for the first (whoami).
  state.whoami = api('GET', '/v1/me').then((me) => {
    state.me = me;
    document.getElementById('who').textContent = `${me.user ?? 'uid ' + me.uid} · ${me.role === 'write' ? 'can change data' : 'read only'}`;
    document.body.dataset.role = me.role;
  });
  window.addEventListener('hashchange', route);
  try {
    await Promise.all([state.whoami, route()]);
  } catch (e) {
    main.replaceChildren(h('h1', {}, 'Depot'), errorBox(e));
    return;
  }
  document.body.dataset.ready = 'true';
  document.body.dataset.readyMs = String(Math.round(performance.now()));
}
start();
