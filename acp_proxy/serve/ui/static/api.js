// The JSON endpoints. Every URL is relative, so it keeps the token of the page's address.

export async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => query.append(k, x));
    else if (v !== null && v !== undefined && v !== "") query.set(k, v);
  }
  const url = "api/" + path + (query.toString() ? "?" + query : "");
  const response = await fetch(url, { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}
