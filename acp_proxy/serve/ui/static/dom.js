// DOM helpers: every node the page builds goes through here.
//
// Rules:
// - Recorded text is data: it reaches the DOM only as text nodes (el() children, textContent)
//   and as attribute values set with setAttribute on our own element and attribute names;
//   never innerHTML, never a URL built from recorded text.

export const $ = (selector) => document.querySelector(selector);

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    } else if (name === "class") {
      node.className = value;
    } else {
      node.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
export function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Text segments from the server ([text, is_escape]) with the escapes marked.
export function escaped(segments) {
  return segments.map(([text, esc]) => esc ? el("span", { class: "esc" }, text) : text);
}
