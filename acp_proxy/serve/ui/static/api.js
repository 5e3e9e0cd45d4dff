// The JSON endpoints. Every URL is relative, so it keeps the token of the page's address.
// The page's first answers were asked for before the modules arrived (index.html's script,
// window.acpEarly): a request for one of those URLs takes that answer, once, while it is fresh.

const EARLY_MS = 5000;

export async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => query.append(k, x));
    else if (v !== null && v !== undefined && v !== "") query.set(k, v);
  }
  const url = "api/" + path + (query.toString() ? "?" + query : "");
  const early = window.acpEarly && window.acpEarly.get(url);
  if (early) window.acpEarly.delete(url);
  const response = early && performance.now() - early.at < EARLY_MS
    ? await early.answer : await fetch(url, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}
