// @ts-check
// Tiny DOM helpers: build elements without innerHTML (text is always set as text).

/**
 * h('button', { class: 'btn', type: 'button', onclick: fn, 'aria-label': '…' }, 'text', child)
 * Keys: class, text, dataset (object), hidden, on<event> (listener), anything else is an attribute
 * (false/null/undefined skip it, true sets it empty).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'hidden') el.hidden = Boolean(value);
    else if (key === 'value') el.value = value;
    else if (key === 'checked') el.checked = Boolean(value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

let uid = 0;
/** A document-unique id with a readable prefix (labels, aria-describedby). */
export function uniqueId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** Shows a short message in the toast area; errors stay a little longer. */
export function toast(text, kind = 'info') {
  const area = document.getElementById('toasts');
  if (!area) return;
  const el = h('div', { class: `toast toast-${kind}`, text });
  area.append(el);
  while (area.children.length > 3) area.firstChild.remove();
  setTimeout(() => el.remove(), kind === 'error' ? 6000 : 3500);
}

/** Triggers a browser download of a URL (same origin or blob:) under a file name. */
export function downloadUrl(url, filename) {
  const a = h('a', { href: url, download: filename || '', rel: 'noopener', hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
}
